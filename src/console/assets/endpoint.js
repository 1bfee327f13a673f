// One endpoint: its health (success over 1 h and 24 h, failing since,
// disabled and why, circuit, held, rate limit), its charts, enable/disable, rotate
// secret, a test notification, recover failed notifications since a
// time (following the operation), and its policy edited with PATCH.

import { html, useState, useEffect, useLoad, ErrorNote, Loading, Row, time, toLocalInput, fromLocalInput, ConfirmButton } from './ui.js';
import { get, post, patch, path, query, can } from './api.js';
import { health } from './endpoints.js';
import { Operation, counted } from './operations.js';
import { Manage, PublicKey } from './manage.js';
import { PortalLink, ConsumerToken } from './links.js';
import { EndpointCharts } from './overview.js';

async function successRatio(id, window) {
  try {
    const s = await get(`/v1/stats${query({ window, endpoint: id })}`);
    return s.totals.success_ratio === null ? 'no attempt' : `${(s.totals.success_ratio * 100).toFixed(1)} % of ${s.totals.attempts}`;
  } catch {
    return 'unknown';
  }
}

// What waits for the endpoint: pending, due and not sent yet (behind its
// cap, rate limit or circuit, or waiting for a consumer), leased. Each
// count stops at 100,000 (`capped`).
async function backlog(id) {
  const b = await get(path`/v1/endpoints/${id}/backlog`);
  const n = (count) => (b.capped && count >= 100000 ? '100,000+' : String(count));
  return { pending: n(b.pending), due: n(b.due), leased: n(b.leased) };
}

async function load(id) {
  const endpoint = await get(path`/v1/endpoints/${id}`);
  const [hour, day, waits] = await Promise.all([
    successRatio(endpoint.id, '1h'),
    successRatio(endpoint.id, '24h'),
    backlog(endpoint.id).catch(() => null),
  ]);
  return { endpoint, hour, day, waits };
}

function Recover({ endpoint }) {
  const [since, setSince] = useState(toLocalInput(new Date(Date.now() - 3600e3).toISOString()));
  const [until, setUntil] = useState('');
  const [operation, setOperation] = useState(null);
  const [error, setError] = useState(null);
  const url = path`/v1/endpoints/${endpoint.id}/recover`;
  // `until` left empty is now.
  const window = () => ({ since: fromLocalInput(since), until: fromLocalInput(until) || undefined });
  const name = endpoint.uid || endpoint.id;
  const start = async () => {
    setError(null);
    try {
      const started = await post(url, window());
      setOperation(started.id);
    } catch (err) {
      if (err.body && err.body.operation) setOperation(err.body.operation.id);
      setError(err);
    }
  };
  const ask = () => {
    const w = window();
    const to = w.until ? `and ${time(w.until)}` : 'and now';
    return counted(url, w, (n) => `Send again the ${n} notification${n === 1 ? '' : 's'} to ${name} that failed between ${time(w.since)} ${to}?`);
  };
  // The recover starts on the confirm only, not on Enter.
  return html`<form class="inline" onSubmit=${(e) => e.preventDefault()} data-test="recover">
    <div class="field"><label for="recover-since">Recover failed since (UTC)</label>
      <input id="recover-since" type="datetime-local" required value=${since} onInput=${(e) => setSince(e.target.value)} data-test="recover-since" /></div>
    <div class="field"><label for="recover-until">until (UTC; empty: now)</label>
      <input id="recover-until" type="datetime-local" value=${until} onInput=${(e) => setUntil(e.target.value)} data-test="recover-until" /></div>
    <${ConfirmButton} label="Recover" test="recover-submit" run=${start} ask=${ask} />
    <${ErrorNote} error=${error} />
    ${operation && html`<${Operation} id=${operation} />`}
  </form>`;
}

function headerLines(headers) {
  return Object.keys(headers || {}).map((name) => `${name}: `).join('\n');
}

function parseHeaders(text) {
  const headers = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf(':');
    if (line.trim() && at > 0) headers[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return headers;
}

// A stored number as the form's text; null (the deployment's) as empty.
const numberText = (value) => (value === null || value === undefined ? '' : String(value));

// Rebuilt (keyed by the endpoint's `updated_at`) once a save is read
// back, so it shows what is stored; the page keeps the save's note
// (`saved`) across that.
function PolicyForm({ endpoint, saved, onSaved }) {
  const e = endpoint;
  const initial = {
    url: e.url || '',
    description: e.description || '',
    event_types: e.event_types ? e.event_types.join(', ') : '',
    filter: e.filter ? JSON.stringify(e.filter, null, 1) : '',
    timeout_ms: e.timeout_ms === null || e.timeout_ms === undefined ? '' : String(e.timeout_ms),
    schedule: Array.isArray(e.schedule) ? e.schedule.join(', ') : e.schedule,
    success_body: e.success_body || '',
    success_filter: e.success_filter ? JSON.stringify(e.success_filter) : '',
    per_second: e.rate_limit ? String(e.rate_limit.per_second) : '',
    burst: e.rate_limit ? String(e.rate_limit.burst) : '',
    headers: headerLines(e.headers),
    jitter: numberText(e.schedule_jitter),
    max_in_flight: numberText(e.max_in_flight),
    fresh_share: numberText(e.fresh_share),
    breaker: e.breaker ? 'on' : 'off',
    breaker_failures: numberText(e.breaker && e.breaker.failures),
    breaker_open_ms: numberText(e.breaker && e.breaker.open_ms),
    breaker_max_open_ms: numberText(e.breaker && e.breaker.max_open_ms),
    ordering: e.ordering || 'none',
    on_failure: e.ordering_on_failure || 'continue',
  };
  const [form, setForm] = useState(initial);
  const [result, setResult] = useState(null);
  const [edited, setEdited] = useState(false);
  const [busy, setBusy] = useState(false);
  const set = (name) => (ev) => {
    setEdited(true);
    setForm({ ...form, [name]: ev.target.value });
  };
  const submit = async (ev) => {
    ev.preventDefault();
    const change = {};
    if (form.url !== initial.url) change.url = form.url.trim();
    if (form.description !== initial.description) change.description = form.description;
    if (form.event_types !== initial.event_types) {
      const types = form.event_types.split(',').map((t) => t.trim()).filter(Boolean);
      change.event_types = types.length ? types : null;
    }
    // A filter is checked here only as JSON; hookd checks the filter itself
    // and names the path and operator it refuses. Empty: null (none).
    const filters = [['filter', 'The payload filter'], ['success_filter', 'The success filter']];
    for (const [name, what] of filters) {
      if (form[name] === initial[name]) continue;
      try {
        change[name] = form[name].trim() === '' ? null : JSON.parse(form[name]);
      } catch (error) {
        setResult({ ok: false, error: new Error(`${what} is not JSON: ${error.message}`) });
        return;
      }
    }
    if (form.timeout_ms !== initial.timeout_ms) change.timeout_ms = form.timeout_ms === '' ? null : Number(form.timeout_ms);
    if (form.schedule !== initial.schedule) {
      const parts = form.schedule.split(',').map((s) => s.trim()).filter(Boolean);
      change.schedule = parts.length === 1 && !/\d/.test(parts[0]) ? parts[0] : parts;
    }
    if (form.success_body !== initial.success_body) change.success_body = form.success_body || null;
    // A number left empty is the deployment's default (null).
    const number = (text) => (text.trim() === '' ? null : Number(text));
    if (form.jitter !== initial.jitter) change.schedule_jitter = number(form.jitter);
    if (form.max_in_flight !== initial.max_in_flight) change.max_in_flight = number(form.max_in_flight);
    if (form.fresh_share !== initial.fresh_share) change.fresh_share = number(form.fresh_share);
    const breakerFields = ['breaker', 'breaker_failures', 'breaker_open_ms', 'breaker_max_open_ms'];
    if (breakerFields.some((name) => form[name] !== initial[name])) {
      change.breaker = form.breaker === 'off' ? null : {
        failures: number(form.breaker_failures),
        open_ms: number(form.breaker_open_ms),
        max_open_ms: number(form.breaker_max_open_ms),
      };
    }
    if (form.ordering !== initial.ordering) change.ordering = form.ordering;
    if (form.on_failure !== initial.on_failure) change.ordering_on_failure = form.on_failure;
    if (form.per_second !== initial.per_second || form.burst !== initial.burst) {
      change.rate_limit = form.per_second === '' && form.burst === ''
        ? null : { per_second: Number(form.per_second), burst: Number(form.burst) };
    }
    // Header values are never shown, so headers are sent only when
    // edited, and then all of them with their values: a line left
    // without its value would erase it (a receiver's Authorization, say),
    // so saving waits until every line has one.
    if (form.headers !== initial.headers) {
      const headers = parseHeaders(form.headers);
      const blank = Object.keys(headers).filter((name) => headers[name] === '');
      if (blank.length) {
        setResult({ ok: false, error: new Error(`Give ${blank.join(', ')} a value again (values are never shown), or remove the line.`) });
        return;
      }
      change.headers = headers;
    }
    if (!Object.keys(change).length) {
      setResult({ ok: true, text: 'Nothing changed.' });
      return;
    }
    // Saved, the form is rebuilt from what is stored (its key is the
    // endpoint's updated_at) and that form says "Saved.": the note never
    // stands beside fields that are about to be replaced.
    setBusy(true);
    try {
      await patch(path`/v1/endpoints/${e.id}`, change);
      await onSaved('Saved.');
    } catch (error) {
      setResult({ ok: false, error });
      setBusy(false);
    }
  };
  const shown = result || (saved && !edited && { ok: true, text: saved });
  const pull = e.delivery === 'pull';
  return html`<form class="policy" onSubmit=${submit} data-test="policy">
    ${!pull && html`<div class="field wide"><label for="p-url">URL (hookd POSTs each notification here)</label>
      <input id="p-url" type="url" value=${form.url} onInput=${set('url')} data-test="policy-url" /></div>`}
    <div class="field wide"><label for="p-description">Description</label>
      <input id="p-description" value=${form.description} onInput=${set('description')} data-test="policy-description" /></div>
    <div class="field"><label for="p-types">Event types it takes (order.*, refund.created; empty: all)</label>
      <input id="p-types" value=${form.event_types} onInput=${set('event_types')} data-test="policy-event-types" /></div>
    <div class="field"><label for="p-timeout">Timeout, ms (empty: the deployment's)</label>
      <input id="p-timeout" inputmode="numeric" value=${form.timeout_ms} onInput=${set('timeout_ms')} data-test="policy-timeout" /></div>
    <div class="field"><label for="p-schedule">Schedule (a preset, or waits: 0s, 30s, 5m)</label>
      <input id="p-schedule" value=${form.schedule} onInput=${set('schedule')} data-test="policy-schedule" /></div>
    <div class="field"><label for="p-success">Success body (empty: any 2xx)</label>
      <input id="p-success" value=${form.success_body} onInput=${set('success_body')} data-test="policy-success-body" /></div>
    <div class="field"><label for="p-success-filter">Success filter, JSON: a 2xx succeeds only with a JSON body it matches ({"code": "SUCCESS"}; empty: none)</label>
      <input id="p-success-filter" value=${form.success_filter} onInput=${set('success_filter')} data-test="policy-success-filter" /></div>
    <div class="field"><label for="p-rate">Rate limit, per second (empty: none)</label>
      <input id="p-rate" inputmode="decimal" value=${form.per_second} onInput=${set('per_second')} data-test="policy-per-second" /></div>
    <div class="field"><label for="p-burst">Burst</label>
      <input id="p-burst" inputmode="numeric" value=${form.burst} onInput=${set('burst')} data-test="policy-burst" /></div>
    <div class="field"><label for="p-jitter">Schedule jitter, 0 to 0.5 (empty: none)</label>
      <input id="p-jitter" inputmode="decimal" value=${form.jitter} onInput=${set('jitter')} data-test="policy-jitter" /></div>
    ${!pull && html`<div class="field"><label for="p-in-flight">At most in flight (empty: the deployment's)</label>
      <input id="p-in-flight" inputmode="numeric" value=${form.max_in_flight} onInput=${set('max_in_flight')} data-test="policy-max-in-flight" /></div>
    <div class="field"><label for="p-fresh">Fresh share of the rate, 0 to 1 (empty: the deployment's)</label>
      <input id="p-fresh" inputmode="decimal" value=${form.fresh_share} onInput=${set('fresh_share')} data-test="policy-fresh-share" /></div>
    <fieldset class="field wide group"><legend>Circuit breaker</legend>
      <div class="field"><label for="p-breaker">Breaker (off: its notifications are never held)</label>
        <select id="p-breaker" value=${form.breaker} onChange=${set('breaker')} data-test="policy-breaker">
          <option value="on">on</option><option value="off">off</option></select></div>
      <div class="field"><label for="p-breaker-failures">Failures in a row that open it (empty: the deployment's)</label>
        <input id="p-breaker-failures" inputmode="numeric" disabled=${form.breaker === 'off'} value=${form.breaker_failures} onInput=${set('breaker_failures')} data-test="policy-breaker-failures" /></div>
      <div class="field"><label for="p-breaker-open">Open for, ms (empty: the deployment's)</label>
        <input id="p-breaker-open" inputmode="numeric" disabled=${form.breaker === 'off'} value=${form.breaker_open_ms} onInput=${set('breaker_open_ms')} data-test="policy-breaker-open-ms" /></div>
      <div class="field"><label for="p-breaker-max">Longest open, ms (empty: the deployment's)</label>
        <input id="p-breaker-max" inputmode="numeric" disabled=${form.breaker === 'off'} value=${form.breaker_max_open_ms} onInput=${set('breaker_max_open_ms')} data-test="policy-breaker-max-open-ms" /></div>
    </fieldset>`}
    <fieldset class="field wide group"><legend>Order per key</legend>
      <div class="field"><label for="p-ordering">Ordering (key: one at a time per order_key)</label>
        <select id="p-ordering" value=${form.ordering} onChange=${set('ordering')} data-test="policy-ordering">
          <option value="none">none</option><option value="key">key</option></select></div>
      <div class="field"><label for="p-on-failure">When one fails or is cancelled (hold: the rest wait until it succeeds)</label>
        <select id="p-on-failure" value=${form.on_failure} onChange=${set('on_failure')} disabled=${form.ordering !== 'key'} data-test="policy-on-failure">
          <option value="continue">continue</option><option value="hold">hold</option></select></div>
    </fieldset>
    <div class="field wide"><label for="p-filter">Payload filter, JSON: only events whose payload matches ({"amount": {"$gte": 100}, "currency": "CNY"}; empty: every event of its types)</label>
      <textarea id="p-filter" rows="3" value=${form.filter} onInput=${set('filter')} data-test="policy-filter"></textarea></div>
    <div class="field wide"><label for="p-headers">Headers, one "Name: value" a line (values are hidden: editing replaces them all)</label>
      <textarea id="p-headers" rows="3" value=${form.headers} onInput=${set('headers')} data-test="policy-headers"></textarea></div>
    <div class="actions"><button type="submit" disabled=${busy} data-test="policy-save">${busy ? 'Saving…' : 'Save'}</button></div>
    ${shown && (shown.ok ? html`<p class="notice" role="status" data-test="policy-result">${shown.text}</p>` : html`<${ErrorNote} error=${shown.error} test="policy-error" />`)}
  </form>`;
}

export function EndpointPage({ id, who }) {
  const found = useLoad(() => load(id), id, 5000);
  const [message, setMessage] = useState(null);
  const [saved, setSaved] = useState(null);
  const act = async (what, run) => {
    setMessage(null);
    try {
      setMessage({ ok: true, text: await run() });
      await found.reload();
    } catch (error) {
      setMessage({ ok: false, error, what });
    }
  };
  if (!found.data) {
    return found.error ? html`<section><h1>Endpoint</h1><${ErrorNote} error=${found.error} /></section>` : html`<${Loading} what="the endpoint" />`;
  }
  const { endpoint: e, hour, day, waits } = found.data;
  const pull = e.delivery === 'pull';
  const c = e.circuit || { state: 'closed', held: 0 };
  const admin = can(who, 'admin');
  return html`<section data-test="endpoint">
    <p><a href="#/endpoints">← Endpoints</a></p>
    <div class="heading"><h1>Endpoint <code data-test="endpoint-id">${e.uid || e.id}</code></h1>${health(e)}</div>
    ${e.description && html`<p class="muted" data-test="endpoint-heading-description">${e.description}</p>`}
    <dl class="facts">
      <${Row} label="Id">${e.id}<//>
      <${Row} label="URL">${e.url || '— (pull: consumers take its notifications)'}<//>
      <${Row} label="Owner">${e.owner || '—'}<//>
      <${Row} label="Success, last hour" test="success-1h">${hour}<//>
      <${Row} label="Success, last 24 hours" test="success-24h">${day}<//>
      <${Row} label="Failing since" test="failing-since">${time(e.failing_since)}<//>
      <${Row} label="Disabled" test="disabled">${e.disabled ? `yes${e.disabled_reason ? `: ${e.disabled_reason}` : ''}` : 'no'}<//>
      <${Row} label="Circuit" test="circuit">${c.state}${c.opened_at ? `, opened ${time(c.opened_at)}` : ''}${c.next_probe_at ? `, next probe ${time(c.next_probe_at)}` : ''}<//>
      <${Row} label="Held by the circuit" test="held">${c.held}<//>
      <${Row} label="Rate limit" test="rate-limit">${e.rate_limit ? `${e.rate_limit.per_second}/s, burst ${e.rate_limit.burst}` : 'none of its own'}<//>
      <${Row} label="Schedule">${Array.isArray(e.schedule) ? e.schedule.join(', ') : e.schedule}${e.schedule_jitter ? ` (jitter ±${e.schedule_jitter * 100} %)` : ''}<//>
      <${Row} label="Success rule" test="success-rule">${e.success_body ? `2xx with body "${e.success_body}"` : e.success_filter ? html`2xx with a JSON body matching <code>${JSON.stringify(e.success_filter)}</code>` : 'any 2xx'}; final on ${(e.permanent_statuses || []).join(', ') || 'none'}<//>
      <${Row} label="Event types">${e.event_types ? e.event_types.join(', ') : 'all'}<//>
      <${Row} label="Signing"><${PublicKey} endpoint=${e} /><//>
      <${Row} label="Payload filter" test="payload-filter">${e.filter ? html`<code>${JSON.stringify(e.filter)}</code>` : 'none: every event of its types'}<//>
      ${waits && html`<${Row} label="Backlog" test="backlog">${waits.pending} pending, ${waits.due} due and not sent yet<//>`}
      ${waits && pull && html`<${Row} label="Pull" test="pull">${waits.leased} leased, ${waits.due} waiting<//>`}
      <${Row} label="Notifications"><a href=${`#/notifications?endpoint=${e.id}`} data-test="endpoint-notifications">Search its notifications</a>
        · <a href=${`#/notifications?endpoint=${e.id}&order=attempts`} data-test="endpoint-most-attempted">Most attempted first</a><//>
    </dl>
    <${EndpointCharts} id=${e.id} />
    ${message && (message.ok ? html`<p class="notice" role="status" data-test="endpoint-result">${message.text}</p>` : html`<${ErrorNote} error=${message.error} test="endpoint-error" />`)}
    ${admin && html`<div class="buttons">
      ${e.disabled
        ? html`<button type="button" data-test="toggle-disabled" onClick=${() => act('toggle', async () => {
            await patch(path`/v1/endpoints/${e.id}`, { disabled: false });
            return 'Enabled.';
          })}>Enable</button>`
        : html`<${ConfirmButton} label="Disable" test="toggle-disabled" danger=${true}
            question=${`Disable ${e.uid || e.id}? Nothing is sent to it until it is enabled again.`}
            run=${() => act('toggle', async () => {
              await patch(path`/v1/endpoints/${e.id}`, { disabled: true });
              return 'Disabled: nothing is sent until it is enabled.';
            })} />`}
      ${can(who, 'secrets') && html`<${ConfirmButton} label="Rotate secret" test="rotate-secret"
        question=${`Rotate ${e.uid || e.id}'s signing secret? Its receiver must take the new one before the old one stops signing.`}
        run=${() => act('rotate', async () => {
        const rotated = await post(path`/v1/endpoints/${e.id}/secret/rotate`);
        // How long the old secret signs beside the new one is the
        // deployment's setting (or the request's): read it back.
        const overlap = await get(path`/v1/endpoints/${e.id}/secret`).catch(() => null);
        const until = overlap && overlap.previous_secret_expires_at;
        const old = until ? `the old one signs beside it until ${time(until)}` : 'the old one no longer signs';
        return html`New secret (shown once; ${old}): <code data-test="new-secret">${rotated.secret}</code>`;
      })} />`}
    </div>`}
    ${can(who, 'write') && !who.portal && html`<div class="buttons">
      <button type="button" data-test="send-test" onClick=${() => act('test', async () => {
        // An endpoint that takes only some event types would refuse
        // `hookd.test`: the server sends it a test without an event type
        // (which every endpoint takes) rather than posing as one of its
        // real types, and says so in its payload.
        const created = await post(path`/v1/endpoints/${e.id}/test`);
        const how = e.event_types ? ' (without an event type: this endpoint takes only some)' : '';
        return html`Test notification sent${how}: <a href=${`#/notifications/${created.id}`} data-test="test-link">${created.id}</a>`;
      })}>Send a test notification</button>
    </div>
    <${Recover} endpoint=${e} />`}
    ${can(who, 'manage') && html`<${Manage} endpoint=${e} onSaved=${() => found.reload()} />`}
    ${admin && html`<h2>Links and tokens</h2><${PortalLink} endpoint=${e} />${pull && html`<${ConsumerToken} endpoint=${e} />`}`}
    ${admin && html`<h2>Settings</h2><${PolicyForm} key=${e.updated_at} endpoint=${e} saved=${saved}
      onSaved=${async (text) => { setSaved(text); await found.reload(); }} />`}
  </section>`;
}
