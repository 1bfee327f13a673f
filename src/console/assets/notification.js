// One notification: where it stands, its payload (as text, never as
// HTML), every attempt as a timeline with the next attempt's countdown,
// and retry and cancel. Refreshes while it is pending. An attempt shows
// the request's headers as sent, the response's as answered, and the
// request as a curl command; an attempt a retry started is marked.

import { html, useState, useLoad, useNow, ErrorNote, Loading, Status, Row, time, relative, nextLabel, ConfirmButton } from './ui.js';
import { EndpointName, read as readEndpoint } from './names.js';
import { get, getWithText, rawMember, post, path, can } from './api.js';

async function allAttempts(id) {
  const rows = [];
  let cursor = null;
  // 500 a page; a schedule has far fewer attempts, but a retried
  // notification starts new series, so follow the pages (up to 10).
  for (let page = 0; page < 10; page++) {
    const found = await get(path`/v1/notifications/${id}/attempts` + `?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    rows.push(...found.data);
    cursor = found.next_cursor;
    if (!cursor) break;
  }
  return rows;
}

async function load(id) {
  const [found, attempts] = await Promise.all([getWithText(path`/v1/notifications/${id}`), allAttempts(id)]);
  const notification = found.data;
  const endpoint = await readEndpoint(notification.endpoint_id);
  // The body as sent: a JSON payload as stored (parsing re-spells it).
  const sentBody = notification.payload !== undefined && notification.payload !== null
    ? rawMember(found.text, 'payload') ?? JSON.stringify(notification.payload)
    : notification.body ?? '';
  return { notification, attempts, sentBody, endpointUrl: endpoint && endpoint.url };
}

// The W3C trace context's headers: no secret, so their values are shown.
const TRACE_HEADERS = ['traceparent', 'tracestate'];

// A notification's custom headers as its page lists them: each name, and
// the value where the API shows it (a trace context's); the others' values
// are masked.
export function headerList(headers) {
  const entries = Object.entries(headers || {});
  const shown = entries.map(([name, value]) => (value === '***' ? name : `${name}: ${value}`));
  const hidden = entries.some(([, value]) => value === '***');
  return `${shown.join(', ')}${hidden ? ' (values hidden)' : ''}`;
}

// A word for the shell, quoted as is.
const shellWord = (text) => `'${String(text).replaceAll("'", "'\\''")}'`;

// Attempt `a` as a curl command: its URL, the request's headers as sent
// (a custom header's value is not kept: a placeholder says so) and the
// body, as `--data-raw`: `--data-binary` reads a body that begins with
// `@` as the name of a file to send, from the machine of whoever runs
// the command. Its timestamp is the attempt's, so a receiver that checks
// the timestamp's age refuses it after its tolerance (5 minutes for the
// Standard Webhooks libraries).
export function curlOf(a, url, body) {
  const words = [`curl -X POST ${shellWord(url || '<the endpoint URL>')}`];
  for (const h of a.request_headers || []) {
    // A trace context not kept is left out: a placeholder would be a
    // malformed one, which a receiver ignores anyway.
    if (h.value === null && TRACE_HEADERS.includes(h.name.toLowerCase())) continue;
    words.push(`-H ${shellWord(`${h.name}: ${h.value === null ? '<value not kept>' : h.value}`)}`);
  }
  words.push(`--data-raw ${shellWord(body)}`);
  return words.join(' \\\n  ');
}

function Headers({ lines, test, label }) {
  return html`<table class="headers" data-test=${test} aria-label=${label}><tbody>
    ${lines.map((h) => html`<tr><th scope="row">${h.name}</th><td>${h.value === null ? html`<span class="muted">value not kept</span>` : h.value}</td></tr>`)}
  </tbody></table>`;
}

function CopyCurl({ text }) {
  const [copied, setCopied] = useState(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied('Copied.');
    } catch {
      setCopied('Select the command and copy it: this page may not write to the clipboard.');
    }
  };
  return html`<details data-test="attempt-curl-details"><summary>Copy as curl</summary>
    <pre data-test="attempt-curl">${text}</pre>
    <button type="button" onClick=${copy} data-test="copy-curl">Copy</button>
    ${copied && html` <span role="status">${copied}</span>`}
    <p class="muted">The request as sent, its timestamp and signature included: a receiver that checks the timestamp's age refuses it once that is past its tolerance.</p>
  </details>`;
}

// The payload pretty-printed. It is only ever a text node's content.
function payloadText(n) {
  if (n.payload !== undefined && n.payload !== null) return JSON.stringify(n.payload, null, 2);
  if (n.body !== undefined && n.body !== null) return n.body;
  return '(no body)';
}

function Attempt({ a, url, body }) {
  const code = a.status_code === null ? 'no response' : `HTTP ${a.status_code}`;
  return html`<li class=${`attempt outcome-${a.outcome}`} data-test="attempt">
    <div class="attempt-head">
      <span class="num">#${a.number}</span>
      <time datetime=${a.started_at}>${time(a.started_at)}</time>
      <span data-test="attempt-status">${code}</span>
      <span>${a.duration_ms} ms</span>
      <span class=${`badge badge-${a.outcome}`} data-test="attempt-outcome">${a.outcome}</span>
      ${a.retried && html`<span class="badge badge-retried" data-test="attempt-retried"
        title="A retry started this series: a caller's, a bulk retry's or a recover's">manual retry</span>`}
    </div>
    ${a.error && html`<p class="error-text" data-test="attempt-error">${a.error.code}: ${a.error.message}</p>`}
    ${a.response_body && html`<details open=${a.response_body.length <= 400}><summary>Response body</summary><pre data-test="attempt-body">${a.response_body}</pre></details>`}
    ${a.response_headers && html`<details><summary>Response headers</summary><${Headers} lines=${a.response_headers} test="response-headers" label="Response headers" /></details>`}
    ${a.request_headers && html`<details><summary>Request headers</summary><${Headers} lines=${a.request_headers} test="request-headers" label="Request headers" /></details>`}
    ${a.request_headers && html`<${CopyCurl} text=${curlOf(a, a.url || url, body)} />`}
    ${!a.request_headers && html`<p class="muted" data-test="attempt-headers-absent">${headersAbsent(a)}</p>`}
  </li>`;
}

// Why an attempt shows no headers (`request_headers` is null).
function headersAbsent(a) {
  if (a.number === 1 && a.outcome === 'succeeded') {
    return 'No headers: hookd keeps none for a delivery its receiver accepted at the first attempt.';
  }
  return 'No headers: no request was sent, or the attempt was recorded before hookd kept them.';
}

// Why a pending notification waits (its `waiting`), in words.
const WAITS = {
  scheduled: 'scheduled: its next attempt is due',
  due: 'due: the next claim takes it',
  in_flight: 'in flight: an attempt is under way; its lease ends',
  rate_limit: "rate limit: the endpoint's limit gave it a slot",
  circuit_open: "circuit open: the endpoint's circuit holds it; a probe may run",
  ordering: 'ordering: behind an earlier notification of its key',
  endpoint_disabled: 'endpoint disabled: held until the endpoint is enabled',
  pull: 'pull: waiting for a consumer to take it',
};

function Waiting({ waiting, now }) {
  if (!waiting) return '—';
  return html`<span data-test="waiting" data-reason=${waiting.reason}>${WAITS[waiting.reason] || waiting.reason}${waiting.until && html` <time datetime=${waiting.until}>${relative(waiting.until, now)}</time>`}${waiting.behind && html` <a href=${`#/notifications/${waiting.behind}`}>${waiting.behind}</a>`}</span>`;
}

function Timeline({ attempts, notification, now, url, body }) {
  const n = notification;
  return html`<ol class="timeline" data-test="timeline" aria-label="Attempts">
    ${attempts.map((a) => html`<${Attempt} key=${a.number} a=${a} url=${url} body=${body} />`)}
    ${n.next_attempt_at && html`<li class="attempt next" data-test="next-attempt">
      <div class="attempt-head"><span class="num">next</span>
      ${n.waiting && n.waiting.until && html`<time datetime=${n.waiting.until}>${time(n.waiting.until)}</time>`}
      ${!(n.waiting && n.waiting.until) && html`<time datetime=${n.next_attempt_at}>${time(n.next_attempt_at)}</time>`}
      <span data-test="countdown">${n.leased ? `leased by a consumer; lease ends ${relative(n.next_attempt_at, now)}` : nextLabel(n, now)}</span></div>
    </li>`}
    ${!attempts.length && !n.next_attempt_at && html`<li class="muted">No attempt.</li>`}
  </ol>`;
}

export function NotificationPage({ id, who }) {
  const now = useNow(1000);
  const [result, setResult] = useState(null);
  const [busy, setBusy] = useState(false);
  const found = useLoad(() => load(id), id, 2000);
  const act = async (what) => {
    setBusy(true);
    setResult(null);
    try {
      await post(path`/v1/notifications/${id}/${what}`);
      setResult({ ok: true, text: what === 'retry' ? 'Retry requested: a new attempt series starts now.' : 'Cancelled.' });
      await found.reload();
    } catch (error) {
      setResult({ ok: false, error });
    } finally {
      setBusy(false);
    }
  };
  if (!found.data) {
    return found.error ? html`<section><h1>Notification</h1><${ErrorNote} error=${found.error} /></section>` : html`<${Loading} what="the notification" />`;
  }
  const { notification: n, attempts, sentBody, endpointUrl } = found.data;
  const retryable = (n.status === 'failed' || n.status === 'pending') && !n.leased;
  return html`<section data-test="notification">
    <p><a href="#/notifications">← Notifications</a></p>
    <div class="heading"><h1>Notification <code data-test="notification-id">${n.id}</code></h1><${Status} status=${n.status} /></div>
    <div class="buttons">
      ${can(who, 'retry') && html`<button type="button" disabled=${busy || !retryable} onClick=${() => act('retry')} data-test="retry">Retry now</button>`}
      ${can(who, 'write') && html`<${ConfirmButton} label="Cancel" test="cancel" danger=${true} disabled=${busy || n.status !== 'pending'}
        question="Cancel this notification? It will not be sent again." run=${() => act('cancel')} />`}
    </div>
    ${result && (result.ok ? html`<p class="notice" role="status" data-test="action-result">${result.text}</p>` : html`<${ErrorNote} error=${result.error} test="action-error" />`)}
    <div class="columns">
      <dl class="facts">
        <${Row} label="Endpoint" test="endpoint-row"><${EndpointName} id=${n.endpoint_id} test="endpoint-name" /><//>
        <${Row} label="Key" test="key">${n.key || '—'}<//>
        <${Row} label="Event type">${n.event_type || '—'}<//>
        ${n.event_id && html`<${Row} label="Event"><a href=${`#/notifications?event=${n.event_id}`}>${n.event_id}</a><//>`}
        ${n.url && html`<${Row} label="URL">${n.url}<//>`}
        <${Row} label="Waiting" test="waiting-row"><${Waiting} waiting=${n.waiting} now=${now} /><//>
        <${Row} label="Attempts" test="attempts">${n.attempts}<//>
        <${Row} label="Created">${time(n.created_at)}<//>
        <${Row} label="Deliver at">${time(n.deliver_at)}<//>
        <${Row} label="Completed">${time(n.completed_at)}<//>
        <${Row} label="Schedule">${Array.isArray(n.schedule) ? n.schedule.join(', ') : n.schedule}<//>
        <${Row} label="Content type">${n.content_type}<//>
        ${Object.keys(n.headers || {}).length > 0 && html`<${Row} label="Headers" test="headers-row">${headerList(n.headers)}<//>`}
      </dl>
      <div>
        <h2>Payload</h2>
        <pre class="payload" data-test="payload" tabindex="0">${payloadText(n)}</pre>
      </div>
    </div>
    <h2>Attempts</h2>
    <${Timeline} attempts=${attempts} notification=${n} now=${now} url=${n.url || endpointUrl} body=${sentBody} />
    ${found.error && html`<${ErrorNote} error=${found.error} />`}
  </section>`;
}
