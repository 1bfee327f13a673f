// Notification search: by id (opens it), key or key prefix (an event's
// key finds its deliveries), event type, event, endpoint, owner, status,
// creation time and end time ("failed in the last hour"), newest or oldest
// first, in pages; rows selected and retried or cancelled, or every failed
// (pending) one that matches retried (cancelled) by filter: an operation,
// counted before it is confirmed.

import { html, useState, useEffect, useLoad, ErrorNote, Loading, Empty, Pager, Status, time, relative, nextLabel, useNow, setRoute, shortId, fromLocalInput, toLocalInput, ConfirmButton } from './ui.js';
import { get, post, path, query, can } from './api.js';
import { EndpointName } from './names.js';
import { Operation, counted } from './operations.js';

const FILTERS = ['key', 'key_prefix', 'event_type', 'event', 'endpoint', 'owner', 'status', 'created_after', 'created_before', 'completed_after', 'order'];
const TIMES = ['created_after', 'created_before', 'completed_after'];
const STATUSES = ['', 'pending', 'succeeded', 'failed', 'cancelled'];
// What the next page of an order holds.
const NEXT = { newest: 'older ones', oldest: 'newer ones', attempts: 'those with as many attempts or fewer' };

function SearchForm({ params, portal }) {
  const [form, setForm] = useState(() => {
    const f = { id: '' };
    for (const name of FILTERS) f[name] = params.get(name) || '';
    for (const name of TIMES) f[name] = toLocalInput(f[name]);
    return f;
  });
  const set = (name) => (e) => setForm({ ...form, [name]: e.target.value });
  const submit = (e) => {
    e.preventDefault();
    if (form.id.trim()) {
      setRoute(`/notifications/${encodeURIComponent(form.id.trim())}`);
      return;
    }
    const next = {};
    for (const name of FILTERS) next[name] = form[name].trim();
    for (const name of TIMES) next[name] = fromLocalInput(next[name]);
    setRoute('/notifications', next);
  };
  // The failures of the last hour, in the scope searched (endpoint,
  // owner): what an on-call engineer opens first.
  const failedLastHour = () => {
    const since = new Date(Date.now() - 3600 * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
    setRoute('/notifications', { endpoint: form.endpoint.trim(), owner: form.owner.trim(), status: 'failed', completed_after: since });
  };
  const text = (name, label, hint) => html`<div class="field">
    <label for=${`f-${name}`}>${label}</label>
    <input id=${`f-${name}`} value=${form[name]} onInput=${set(name)} data-test=${`filter-${name}`} placeholder=${hint || ''} />
  </div>`;
  return html`<form class="filters" onSubmit=${submit} data-test="search" role="search">
    ${text('id', 'Notification id', 'opens it')}
    ${text('key', 'Key', 'order-123:paid')}
    ${text('key_prefix', 'Key starts with', 'order-12')}
    ${text('event_type', 'Event type', 'order.paid')}
    ${!portal && text('endpoint', 'Endpoint', 'id or uid')}
    ${!portal && text('owner', 'Owner')}
    ${text('event', 'Event id')}
    <div class="field">
      <label for="f-status">Status</label>
      <select id="f-status" value=${form.status} onChange=${set('status')} data-test="filter-status">
        ${STATUSES.map((s) => html`<option value=${s}>${s || 'any'}</option>`)}
      </select>
    </div>
    <div class="field">
      <label for="f-created_after">Created from (UTC)</label>
      <input id="f-created_after" type="datetime-local" value=${form.created_after} onInput=${set('created_after')} data-test="filter-created_after" />
    </div>
    <div class="field">
      <label for="f-created_before">Created before (UTC)</label>
      <input id="f-created_before" type="datetime-local" value=${form.created_before} onInput=${set('created_before')} data-test="filter-created_before" />
    </div>
    <div class="field">
      <label for="f-completed_after">Ended from (UTC)</label>
      <input id="f-completed_after" type="datetime-local" value=${form.completed_after} onInput=${set('completed_after')} data-test="filter-completed_after" />
    </div>
    <div class="field">
      <label for="f-order">Order</label>
      <select id="f-order" value=${form.order} onChange=${set('order')} data-test="filter-order">
        <option value="">newest first</option><option value="oldest">oldest first</option>
        <option value="attempts">most attempts (one endpoint)</option>
      </select>
    </div>
    <div class="actions"><button type="submit" data-test="search-submit">Search</button>
      <button type="button" class="secondary" data-test="failed-last-hour" onClick=${failedLastHour}>Failed in the last hour</button>
      <button type="button" class="secondary" onClick=${() => { setForm({ id: '', ...Object.fromEntries(FILTERS.map((n) => [n, ''])) }); setRoute('/notifications'); }}>Clear</button></div>
  </form>`;
}

// With `selected` (a Set of ids) and `toggle`, each row and the page
// have a checkbox.
export function NotificationTable({ rows, now, selected, toggle }) {
  const picking = !!selected;
  const all = picking && rows.length > 0 && rows.every((n) => selected.has(n.id));
  return html`<div class="scroll"><table data-test="results">
    <thead><tr>
      ${picking && html`<th scope="col"><label class="pick"><input type="checkbox" checked=${all}
        onChange=${() => toggle(rows.map((n) => n.id), !all)} data-test="select-page" />
        <span class="unseen">Select every notification of this page</span></label></th>`}
      <th scope="col">Notification</th><th scope="col">Status</th><th scope="col">Key</th><th scope="col">Event type</th>
      <th scope="col">Endpoint</th><th scope="col">Attempts</th><th scope="col">Created</th><th scope="col">Next attempt</th></tr></thead>
    <tbody>${rows.map((n) => html`<tr key=${n.id} data-test="result">
      ${picking && html`<td><label class="pick"><input type="checkbox" checked=${selected.has(n.id)}
        onChange=${() => toggle([n.id], !selected.has(n.id))} data-test="select" />
        <span class="unseen">Select ${n.id}</span></label></td>`}
      <td><a href=${`#/notifications/${n.id}`} data-test="result-link" title=${n.id}>${shortId(n.id)}</a></td>
      <td><${Status} status=${n.status} /></td>
      <td class="key" data-test="result-key" title=${n.key || ''}>${n.key || '—'}</td>
      <td>${n.event_type || '—'}</td>
      <td data-test="result-endpoint"><${EndpointName} id=${n.endpoint_id} /></td>
      <td>${n.attempts}</td>
      <td>${time(n.created_at)}</td>
      <td data-test="result-next">${nextLabel(n, now)}</td>
    </tr>`)}</tbody></table></div>`;
}

const plural = (n, one) => `${n} ${one}${n === 1 ? '' : 's'}`;

// Runs `action` (`retry` or `cancel`) on each of `ids`, one after another;
// what became of them, by the error code of those refused.
async function each(ids, action) {
  let done = 0;
  const refused = {};
  for (const id of ids) {
    try {
      await post(path`/v1/notifications/${id}/${action}`);
      done += 1;
    } catch (err) {
      const code = err.code || 'error';
      refused[code] = (refused[code] || 0) + 1;
    }
  }
  const verb = action === 'retry' ? 'Retried' : 'Cancelled';
  const why = Object.entries(refused).map(([code, n]) => `${n} ${code}`).join(', ');
  return `${verb} ${done} of ${ids.length}${why ? `; refused: ${why}` : ''}.`;
}

// The actions on the selected rows, and the retry of every failed one
// (the cancel of every pending one) that matches the search: one
// endpoint's, an operation per endpoint.
function BulkActions({ selected, filters, who, onDone }) {
  const [result, setResult] = useState(null);
  const [operation, setOperation] = useState(null);
  const [error, setError] = useState(null);
  const ids = [...selected];
  const run = (action) => async () => {
    setResult(null);
    setResult(await each(ids, action));
    onDone();
  };
  const body = {
    endpoint: filters.endpoint,
    event_type: filters.event_type || undefined,
    key_prefix: filters.key_prefix || undefined,
    created_after: filters.created_after || undefined,
    created_before: filters.created_before || undefined,
  };
  // Failed since a time: a retry takes it (as a recover's since); a
  // cancel has nothing that ended to cancel.
  const retryBody = { ...body, completed_after: filters.completed_after || undefined };
  // What the retry by filter takes: one endpoint, failed ones, and no
  // filter it has no field for; otherwise, what the search lacks.
  const lacks = !filters.endpoint ? 'search one endpoint\'s'
    : filters.status && filters.status !== 'failed' ? 'search failed ones (only those are sent again)'
    : filters.key || filters.event || filters.owner ? 'search without an exact key (a key prefix will do), event or owner'
    : filters.order === 'attempts' ? 'sort by creation (most attempts lists only those attempted more than once)'
    : null;
  const writes = !who.portal && can(who, 'write');
  const byFilter = writes && !lacks;
  // Pending ones of one endpoint, by the same filters: a cancel by filter.
  const cancelsByFilter = writes && filters.endpoint && filters.status === 'pending'
    && !filters.key && !filters.event && !filters.owner && !filters.completed_after
    && filters.order !== 'attempts';
  const start = (action) => async () => {
    setError(null);
    try {
      setOperation((await post(`/v1/notifications/${action}`, action === 'retry' ? retryBody : body)).id);
    } catch (err) {
      if (err.body && err.body.operation) setOperation(err.body.operation.id);
      setError(err);
    }
  };
  const ask = () => counted('/v1/notifications/retry', retryBody,
    (n) => `Send again the ${plural(n, 'failed notification')} of ${filters.endpoint} that match this search (every page, not only this one)?`);
  const askCancel = () => counted('/v1/notifications/cancel', body,
    (n) => `Cancel the ${plural(n, 'pending notification')} of ${filters.endpoint} that match this search (every page, not only this one)? They are never sent.`,
    'No pending notification matches: nothing to cancel.');
  return html`<div class="buttons" data-test="bulk">
    ${can(who, 'retry') && html`<${ConfirmButton} label=${`Retry selected (${ids.length})`} test="retry-selected"
      disabled=${!ids.length} run=${run('retry')}
      question=${`Retry the ${plural(ids.length, 'selected notification')}? Failed and pending ones go again now.`} />`}
    ${writes && html`<${ConfirmButton} label=${`Cancel selected (${ids.length})`} test="cancel-selected"
      danger=${true} disabled=${!ids.length} run=${run('cancel')}
      question=${`Cancel the ${plural(ids.length, 'selected notification')}? Pending ones are never sent; the others stay as they are.`} />`}
    ${byFilter && html`<${ConfirmButton} label="Retry all failed that match" test="retry-matching" run=${start('retry')} ask=${ask} />`}
    ${cancelsByFilter && html`<${ConfirmButton} label="Cancel all pending that match" test="cancel-matching" danger=${true}
      run=${start('cancel')} ask=${askCancel} />`}
    ${writes && lacks && !cancelsByFilter && html`<span class="hint" data-test="retry-matching-hint">To retry every failed notification that matches, ${lacks}.</span>`}
    ${result && html`<p class="notice" role="status" data-test="bulk-result">${result}</p>`}
    <${ErrorNote} error=${error} />
    ${operation && html`<${Operation} id=${operation} onDone=${onDone} />`}
  </div>`;
}

export function NotificationSearch({ params, who }) {
  const now = useNow(5000);
  const filters = {};
  for (const name of FILTERS) filters[name] = params.get(name);
  const cursor = params.get('cursor');
  const key = params.toString();
  const list = useLoad(() => get(`/v1/notifications${query({ ...filters, cursor, limit: 25 })}`), key, 10000);
  const [selected, setSelected] = useState(() => new Set());
  // A selection belongs to one search and page.
  useEffect(() => setSelected(new Set()), [key]);
  const toggle = (ids, on) => {
    const next = new Set(selected);
    for (const id of ids) on ? next.add(id) : next.delete(id);
    setSelected(next);
  };
  const picking = can(who, 'retry') ? selected : undefined;
  const go = (next) => setRoute('/notifications', { ...filters, cursor: next });
  let body;
  if (list.loading && !list.data) body = html`<${Loading} what="notifications" />`;
  else if (!list.data) body = html`<${ErrorNote} error=${list.error} />`;
  else if (!list.data.data.length && !list.data.next_cursor) body = html`<${Empty}>No notification matches.<//>`;
  // A filtered page searches a bounded slice of the history: an empty one
  // with a cursor says only that none matched there; older ones may.
  else if (!list.data.data.length) body = html`<${Empty}>None matches among the notifications searched so far; ${NEXT[filters.order || 'newest']} are on the next page.<//>
    <${Pager} next=${list.data.next_cursor} cursor=${cursor} go=${go} />`;
  else body = html`<${NotificationTable} rows=${list.data.data} now=${now} selected=${picking} toggle=${toggle} />
    <${Pager} next=${list.data.next_cursor} cursor=${cursor} go=${go} />`;
  return html`<section data-test="notifications">
    <h1>Notifications</h1>
    <${SearchForm} key=${key} params=${params} portal=${!!who.portal} />
    ${can(who, 'retry') && html`<${BulkActions} key=${key} selected=${selected} filters=${filters} who=${who}
      onDone=${() => { setSelected(new Set()); list.reload(); }} />`}
    ${list.data && list.error && html`<${ErrorNote} error=${list.error} />`}
    ${body}
  </section>`;
}
