// Notification search: by id (opens it), key, event type, event,
// endpoint, owner, status and creation time, newest first, in pages.

import { html, useState, useLoad, ErrorNote, Loading, Empty, Pager, Status, time, relative, useNow, setRoute, shortId, fromLocalInput, toLocalInput } from './ui.js';
import { get, query } from './api.js';
import { EndpointName } from './names.js';

const FILTERS = ['key', 'event_type', 'event', 'endpoint', 'owner', 'status', 'created_after', 'created_before'];
const STATUSES = ['', 'pending', 'succeeded', 'failed', 'cancelled'];

function SearchForm({ params, portal }) {
  const [form, setForm] = useState(() => {
    const f = { id: '' };
    for (const name of FILTERS) f[name] = params.get(name) || '';
    f.created_after = toLocalInput(f.created_after);
    f.created_before = toLocalInput(f.created_before);
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
    next.created_after = fromLocalInput(next.created_after);
    next.created_before = fromLocalInput(next.created_before);
    setRoute('/notifications', next);
  };
  const text = (name, label, hint) => html`<div class="field">
    <label for=${`f-${name}`}>${label}</label>
    <input id=${`f-${name}`} value=${form[name]} onInput=${set(name)} data-test=${`filter-${name}`} placeholder=${hint || ''} />
  </div>`;
  return html`<form class="filters" onSubmit=${submit} data-test="search" role="search">
    ${text('id', 'Notification id', 'opens it')}
    ${text('key', 'Key', 'order-123:paid')}
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
    <div class="actions"><button type="submit" data-test="search-submit">Search</button>
      <button type="button" class="secondary" onClick=${() => { setForm({ id: '', ...Object.fromEntries(FILTERS.map((n) => [n, ''])) }); setRoute('/notifications'); }}>Clear</button></div>
  </form>`;
}

export function NotificationTable({ rows, now }) {
  return html`<div class="scroll"><table data-test="results">
    <thead><tr><th scope="col">Notification</th><th scope="col">Status</th><th scope="col">Key</th><th scope="col">Event type</th>
      <th scope="col">Endpoint</th><th scope="col">Attempts</th><th scope="col">Created</th><th scope="col">Next attempt</th></tr></thead>
    <tbody>${rows.map((n) => html`<tr key=${n.id} data-test="result">
      <td><a href=${`#/notifications/${n.id}`} data-test="result-link" title=${n.id}>${shortId(n.id)}</a></td>
      <td><${Status} status=${n.status} /></td>
      <td class="key" data-test="result-key">${n.key || '—'}</td>
      <td>${n.event_type || '—'}</td>
      <td data-test="result-endpoint"><${EndpointName} id=${n.endpoint_id} /></td>
      <td>${n.attempts}</td>
      <td>${time(n.created_at)}</td>
      <td>${n.next_attempt_at ? relative(n.next_attempt_at, now) : '—'}</td>
    </tr>`)}</tbody></table></div>`;
}

export function NotificationSearch({ params, who }) {
  const now = useNow(5000);
  const filters = {};
  for (const name of FILTERS) filters[name] = params.get(name);
  const cursor = params.get('cursor');
  const key = params.toString();
  const list = useLoad(() => get(`/v1/notifications${query({ ...filters, cursor, limit: 25 })}`), key, 10000);
  const go = (next) => setRoute('/notifications', { ...filters, cursor: next });
  let body;
  if (list.loading && !list.data) body = html`<${Loading} what="notifications" />`;
  else if (!list.data) body = html`<${ErrorNote} error=${list.error} />`;
  else if (!list.data.data.length && !list.data.next_cursor) body = html`<${Empty}>No notification matches.<//>`;
  // A filtered page searches a bounded slice of the history: an empty one
  // with a cursor says only that none matched there; older ones may.
  else if (!list.data.data.length) body = html`<${Empty}>None matches among the notifications searched so far; older ones are on the next page.<//>
    <${Pager} next=${list.data.next_cursor} cursor=${cursor} go=${go} />`;
  else body = html`<${NotificationTable} rows=${list.data.data} now=${now} />
    <${Pager} next=${list.data.next_cursor} cursor=${cursor} go=${go} />`;
  return html`<section data-test="notifications">
    <h1>Notifications</h1>
    <${SearchForm} key=${key} params=${params} portal=${!!who.portal} />
    ${list.data && list.error && html`<${ErrorNote} error=${list.error} />`}
    ${body}
  </section>`;
}
