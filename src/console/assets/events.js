// Events: newest first, by owner, type, key and creation time; each links
// to its deliveries (the notifications its fan-out created).

import { html, useState, useLoad, ErrorNote, Loading, Empty, Pager, time, setRoute, shortId, fromLocalInput, toLocalInput } from './ui.js';
import { get, query } from './api.js';

const FILTERS = ['owner', 'event_type', 'key', 'created_after', 'created_before'];

export function EventList({ params }) {
  const filters = Object.fromEntries(FILTERS.map((n) => [n, params.get(n) || '']));
  const cursor = params.get('cursor');
  const [form, setForm] = useState({ ...filters, created_after: toLocalInput(filters.created_after), created_before: toLocalInput(filters.created_before) });
  const list = useLoad(() => get(`/v1/events${query({ ...filters, cursor, limit: 25 })}`), params.toString(), 10000);
  const set = (name) => (e) => setForm({ ...form, [name]: e.target.value });
  const submit = (e) => {
    e.preventDefault();
    setRoute('/events', { ...form, created_after: fromLocalInput(form.created_after), created_before: fromLocalInput(form.created_before) });
  };
  const field = (name, label, type = 'text') => html`<div class="field"><label for=${`e-${name}`}>${label}</label>
    <input id=${`e-${name}`} type=${type} value=${form[name]} onInput=${set(name)} data-test=${`event-filter-${name}`} /></div>`;
  let body;
  if (list.loading && !list.data) body = html`<${Loading} what="events" />`;
  else if (!list.data) body = html`<${ErrorNote} error=${list.error} />`;
  else if (!list.data.data.length) body = html`<${Empty}>No event matches.<//>`;
  else body = html`<div class="scroll"><table data-test="events">
    <thead><tr><th scope="col">Event</th><th scope="col">Type</th><th scope="col">Owner</th><th scope="col">Key</th>
      <th scope="col">Deliveries</th><th scope="col">Created</th></tr></thead>
    <tbody>${list.data.data.map((ev) => html`<tr key=${ev.id} data-test="event-row">
      <td><a href=${`#/notifications?event=${ev.id}`} title="Its deliveries">${shortId(ev.id)}</a></td>
      <td>${ev.event_type}</td><td>${ev.owner || '—'}</td><td class="key">${ev.key || '—'}</td>
      <td>${ev.deliveries}</td><td>${time(ev.created_at)}</td></tr>`)}</tbody></table></div>
    <${Pager} next=${list.data.next_cursor} cursor=${cursor} go=${(next) => setRoute('/events', { ...filters, cursor: next })} />`;
  return html`<section data-test="events-page">
    <h1>Events</h1>
    <form class="filters" role="search" onSubmit=${submit}>
      ${field('owner', 'Owner')}${field('event_type', 'Event type')}${field('key', 'Key')}
      ${field('created_after', 'Created from (UTC)', 'datetime-local')}${field('created_before', 'Created before (UTC)', 'datetime-local')}
      <div class="actions"><button type="submit">Search</button></div>
    </form>
    ${body}
  </section>`;
}
