// Endpoints: each with its health at a glance (circuit, disabled,
// failing since), newest first, in pages; filter by owner.

import { html, useState, useLoad, ErrorNote, Loading, Empty, Pager, time, setRoute } from './ui.js';
import { get, post, query, can } from './api.js';

// A new push endpoint: its uid, owner, URL, description and event types;
// the rest keeps the deployment's defaults and is edited on its page. Its
// signing secret is shown here once.
function NewEndpoint({ onCreated }) {
  const empty = { uid: '', owner: '', url: '', description: '', event_types: '' };
  const [form, setForm] = useState(empty);
  const [created, setCreated] = useState(null);
  const [error, setError] = useState(null);
  const set = (name) => (ev) => setForm({ ...form, [name]: ev.target.value });
  const submit = async (ev) => {
    ev.preventDefault();
    setError(null);
    const types = form.event_types.split(',').map((t) => t.trim()).filter(Boolean);
    const body = { url: form.url.trim(), description: form.description };
    if (form.uid.trim()) body.uid = form.uid.trim();
    if (form.owner.trim()) body.owner = form.owner.trim();
    if (types.length) body.event_types = types;
    try {
      const endpoint = await post('/v1/endpoints', body);
      setCreated(endpoint);
      setForm(empty);
      onCreated();
    } catch (err) {
      setError(err);
    }
  };
  const field = (name, label, type = 'text') => html`<div class="field"><label for=${`n-${name}`}>${label}</label>
    <input id=${`n-${name}`} type=${type} value=${form[name]} onInput=${set(name)} required=${name === 'url'} data-test=${`new-${name}`} /></div>`;
  return html`<details class="new-endpoint" data-test="new-endpoint">
    <summary data-test="new-open">New endpoint</summary>
    <form class="filters" onSubmit=${submit}>
      ${field('uid', 'Uid (your name for it)')}${field('owner', 'Owner (the merchant)')}${field('url', 'URL', 'url')}
      ${field('description', 'Description')}${field('event_types', 'Event types (empty: all)')}
      <div class="actions"><button type="submit" data-test="new-submit">Create</button></div>
    </form>
    <${ErrorNote} error=${error} test="new-error" />
    ${created && html`<p class="notice" role="status" data-test="new-result">Created
      <a href=${`#/endpoints/${created.id}`} data-test="new-link">${created.uid || created.id}</a>. Its signing secret (shown once):
      <code data-test="new-secret">${created.secret}</code></p>`}
  </details>`;
}

export function health(e) {
  if (e.disabled) return html`<span class="badge badge-failed" data-test="health">disabled${e.disabled_reason ? ` (${e.disabled_reason})` : ''}</span>`;
  if (e.circuit && e.circuit.state !== 'closed') return html`<span class="badge badge-pending" data-test="health">circuit ${e.circuit.state}</span>`;
  if (e.failing_since) return html`<span class="badge badge-retry" data-test="health">failing</span>`;
  return html`<span class="badge badge-succeeded" data-test="health">ok</span>`;
}

export function EndpointList({ params, who }) {
  const owner = params.get('owner') || '';
  const cursor = params.get('cursor');
  const [ownerInput, setOwner] = useState(owner);
  const list = useLoad(() => get(`/v1/endpoints${query({ owner, cursor, limit: 50 })}`), params.toString(), 10000);
  let body;
  if (list.loading && !list.data) body = html`<${Loading} what="endpoints" />`;
  else if (!list.data) body = html`<${ErrorNote} error=${list.error} />`;
  else if (!list.data.data.length) body = html`<${Empty}>No endpoint.<//>`;
  else body = html`<div class="scroll"><table data-test="endpoints">
    <thead><tr><th scope="col">Endpoint</th><th scope="col">Description</th><th scope="col">Health</th><th scope="col">URL</th><th scope="col">Delivery</th>
      <th scope="col">Owner</th><th scope="col">Failing since</th><th scope="col">Held</th></tr></thead>
    <tbody>${list.data.data.map((e) => html`<tr key=${e.id} data-test="endpoint-row">
      <td class="name" title=${e.uid || e.id}><a href=${`#/endpoints/${e.id}`} data-test="endpoint-link">${e.uid || e.id}</a></td>
      <td class="about" title=${e.description} data-test="endpoint-description">${e.description || '—'}</td>
      <td>${health(e)}</td>
      <td class="url" title=${e.url || ''}>${e.url || '—'}</td>
      <td>${e.delivery}</td>
      <td class="name" title=${e.owner || ''}>${e.owner || '—'}</td>
      <td>${time(e.failing_since)}</td>
      <td>${e.circuit ? e.circuit.held : 0}</td>
    </tr>`)}</tbody></table></div>
    <${Pager} next=${list.data.next_cursor} cursor=${cursor} go=${(next) => setRoute('/endpoints', { owner, cursor: next })} />`;
  return html`<section data-test="endpoints-page">
    <h1>Endpoints</h1>
    ${!who.portal && can(who, 'admin') && html`<${NewEndpoint} onCreated=${list.reload} />`}
    ${!who.portal && html`<form class="filters" role="search" onSubmit=${(e) => { e.preventDefault(); setRoute('/endpoints', { owner: ownerInput.trim() }); }}>
      <div class="field"><label for="f-owner">Owner</label>
        <input id="f-owner" value=${ownerInput} onInput=${(e) => setOwner(e.target.value)} data-test="filter-owner" /></div>
      <div class="actions"><button type="submit">Filter</button></div>
    </form>`}
    ${body}
  </section>`;
}
