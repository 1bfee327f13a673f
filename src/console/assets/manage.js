// What a portal link with the `manage` permission lets a merchant do on
// its endpoint (docs/design.md §18): change where notifications go,
// which event types it takes and which payloads (its filter), see and rotate its signing secret, and send
// itself a test. The server holds the link to exactly these fields.

import { html, useState, useEffect, ErrorNote, time, ConfirmButton } from './ui.js';
import { get, post, patch, path } from './api.js';

function Result({ result, test }) {
  if (!result) return null;
  return result.ok
    ? html`<p class="notice" role="status" data-test=${test}>${result.text}</p>`
    : html`<${ErrorNote} error=${result.error} test=${`${test}-error`} />`;
}

// Runs `action`, showing what it answers or its error.
function useAction() {
  const [result, setResult] = useState(null);
  const run = async (action) => {
    setResult(null);
    try {
      setResult({ ok: true, text: await action() });
    } catch (error) {
      setResult({ ok: false, error });
    }
  };
  return [result, run];
}

// Built once per page (the page is keyed by the endpoint's id): the
// page's reloads every few seconds neither wipe what is being typed nor
// the note of a save. What was saved is the baseline of the next change.
function Destination({ endpoint, onSaved }) {
  const e = endpoint;
  const shown = (x) => ({
    url: x.url || '',
    types: x.event_types ? x.event_types.join(', ') : '',
    filter: x.filter ? JSON.stringify(x.filter, null, 1) : '',
  });
  const [initial, setInitial] = useState(shown(e));
  const [form, setForm] = useState(initial);
  const [result, run] = useAction();
  const set = (name) => (ev) => setForm({ ...form, [name]: ev.target.value });
  const save = (ev) => {
    ev.preventDefault();
    run(async () => {
      const change = {};
      if (form.url !== initial.url) change.url = form.url.trim();
      if (form.types !== initial.types) {
        const types = form.types.split(',').map((t) => t.trim()).filter(Boolean);
        change.event_types = types.length ? types : null;
      }
      if (form.filter !== initial.filter) {
        try {
          change.filter = form.filter.trim() === '' ? null : JSON.parse(form.filter);
        } catch (error) {
          throw new Error(`The payload filter is not JSON: ${error.message}`);
        }
      }
      if (!Object.keys(change).length) return 'Nothing changed.';
      const saved = await patch(path`/v1/endpoints/${e.id}`, change);
      setInitial(shown(saved));
      setForm(shown(saved));
      onSaved();
      return 'Saved.';
    });
  };
  const pull = e.delivery === 'pull';
  const listed = form.types.split(',').map((t) => t.trim()).filter(Boolean);
  const toggle = (type) => {
    const next = listed.includes(type) ? listed.filter((t) => t !== type) : [...listed, type];
    setForm({ ...form, types: next.join(', ') });
  };
  return html`<form class="policy" onSubmit=${save} data-test="manage-destination">
    ${!pull && html`<div class="field wide"><label for="m-url">Your URL (notifications are POSTed here)</label>
      <input id="m-url" type="url" required value=${form.url} onInput=${set('url')} data-test="manage-url" /></div>`}
    <div class="field wide"><label for="m-types">Event types you take (order.*, refund.created; empty: all)</label>
      <input id="m-types" value=${form.types} onInput=${set('types')} data-test="manage-event-types" /></div>
    <${RecentTypes} endpoint=${e} listed=${listed} toggle=${toggle} />
    <div class="field wide"><label for="m-filter">Only events whose payload matches, as JSON ({"store": "sh-01"}, {"amount": {"$gte": 100}}; empty: every event of your types)</label>
      <textarea id="m-filter" rows="3" value=${form.filter} onInput=${set('filter')} data-test="manage-filter"></textarea></div>
    <div class="actions"><button type="submit" data-test="manage-save">Save</button></div>
    <${Result} result=${result} test="manage-saved" />
  </form>`;
}

// The event types sent lately to the endpoint or its owner, each a
// checkbox that adds it to (or takes it from) the list above.
function RecentTypes({ endpoint, listed, toggle }) {
  const [recent, setRecent] = useState(null);
  useEffect(() => {
    let live = true;
    get(path`/v1/endpoints/${endpoint.id}/event-types`)
      .then((found) => live && setRecent(found.data))
      .catch(() => live && setRecent([]));
    return () => { live = false; };
  }, [endpoint.id]);
  if (!recent) return null;
  if (!recent.length) return html`<p class="hint wide" data-test="manage-recent-types">No event types sent in the last 30 days.</p>`;
  return html`<fieldset class="wide choices" data-test="manage-recent-types">
    <legend>Sent in the last 30 days</legend>
    ${recent.map((type) => html`<label class="check"><input type="checkbox" checked=${listed.includes(type)}
      onChange=${() => toggle(type)} data-test="manage-recent-type" value=${type} /> ${type}</label>`)}
  </fieldset>`;
}

function Secret({ endpoint }) {
  const [result, run] = useAction();
  const name = endpoint.uid || endpoint.id;
  const show = () => run(async () => {
    const s = await get(path`/v1/endpoints/${endpoint.id}/secret`);
    const old = s.previous_secret_expires_at ? ` The previous one signs beside it until ${time(s.previous_secret_expires_at)}.` : '';
    return html`Signing secret: <code data-test="manage-secret">${s.secret}</code>.${old}`;
  });
  const rotate = () => run(async () => {
    const rotated = await post(path`/v1/endpoints/${endpoint.id}/secret/rotate`);
    if (endpoint.signing !== 'hmac') {
      const keys = await get(path`/v1/endpoints/${endpoint.id}/public-key`);
      const before = keys.previous_public_keys[0];
      const old = before ? `the old one signs beside it until ${time(before.expires_at)}` : 'the old one no longer signs';
      return html`New public key (${old}): <code data-test="manage-new-public-key">${keys.public_key}</code>`;
    }
    const s = await get(path`/v1/endpoints/${endpoint.id}/secret`).catch(() => null);
    const until = s && s.previous_secret_expires_at;
    const old = until ? `the old one signs beside it until ${time(until)}` : 'the old one no longer signs';
    return html`New signing secret (${old}): <code data-test="manage-secret">${rotated.secret}</code>`;
  });
  // An ed25519 or rsa2 endpoint's private key is not the receiver's: it
  // verifies with the public key shown above.
  const asymmetric = endpoint.signing !== 'hmac';
  return html`<div class="buttons" data-test="manage-secret-actions">
    ${!asymmetric && html`<button type="button" class="secondary" onClick=${show} data-test="manage-show-secret">Show signing secret</button>`}
    <${ConfirmButton} label="Rotate signing secret" test="manage-rotate"
      question=${`Rotate ${name}'s signing secret? Verify with the new one before the old one stops signing.`}
      run=${rotate} />
  </div>
  <${Result} result=${result} test="manage-secret-result" />`;
}

function Test({ endpoint }) {
  const types = endpoint.event_types || [];
  // A pattern (`order.*`) is no event type to send: the endpoint's own
  // list offers only exact ones, the first chosen; with patterns alone,
  // none (a test without a type, which every endpoint takes) until the
  // merchant names one.
  const exact = types.filter((t) => !t.includes('*'));
  const [type, setType] = useState(exact[0] || (types.length ? '' : 'hookd.test'));
  const [result, run] = useAction();
  const send = (ev) => {
    ev.preventDefault();
    run(async () => {
      const created = await post(path`/v1/endpoints/${endpoint.id}/test`, { event_type: type.trim() || undefined });
      return html`Test sent as ${created.event_type || 'no event type'}: <a href=${`#/notifications/${created.id}`} data-test="manage-test-link">${created.id}</a>`;
    });
  };
  return html`<form class="inline" onSubmit=${send} data-test="manage-test">
    <div class="field"><label for="m-test-type">Event type of the test</label>
      ${exact.length
        ? html`<select id="m-test-type" value=${type} onChange=${(e) => setType(e.target.value)} data-test="manage-test-type">
            ${exact.map((t) => html`<option value=${t}>${t}</option>`)}</select>`
        : html`<input id="m-test-type" value=${type} onInput=${(e) => setType(e.target.value)} data-test="manage-test-type"
            placeholder=${types.length ? `a type matching ${types.join(', ')}, or none` : ''} />`}
    </div>
    <button type="submit" data-test="manage-send-test">Send a test</button>
    <${Result} result=${result} test="manage-test-result" />
  </form>`;
}

// An ed25519 or rsa2 endpoint's public key (and those still signing
// beside it), which is all its receiver needs to verify a delivery.
export function PublicKey({ endpoint }) {
  const [keys, setKeys] = useState(null);
  const asymmetric = endpoint.signing === 'ed25519' || endpoint.signing === 'rsa2';
  useEffect(() => {
    let live = true;
    if (asymmetric) {
      get(path`/v1/endpoints/${endpoint.id}/public-key`)
        .then((found) => live && setKeys(found))
        .catch(() => live && setKeys(null));
    }
    return () => { live = false; };
  }, [endpoint.id, endpoint.signing, endpoint.updated_at]);
  if (!asymmetric) return html`<span data-test="signing">hmac: a shared secret signs each delivery (v1)</span>`;
  const how = endpoint.signing === 'rsa2' ? 'rsa2 (sign and sign_type=RSA2 in the form)' : 'ed25519 (v1a)';
  if (!keys) return html`<span data-test="signing">${how}</span>`;
  return html`<span data-test="signing">${how}: verify with <code class="key" data-test="public-key">${keys.public_key}</code>
    ${keys.previous_public_keys.map((p) => html`; also <code data-test="previous-public-key">${p.public_key}</code> until ${time(p.expires_at)}`)}</span>`;
}

// The section a `manage` link shows on its endpoint's page.
export function Manage({ endpoint, onSaved }) {
  const asymmetric = endpoint.signing !== 'hmac';
  // An rsa2 key is the operator's own: hookd makes none to rotate to.
  return html`<section data-test="manage">
    <h2>Your endpoint</h2>
    <${Destination} endpoint=${endpoint} onSaved=${onSaved} />
    <h3>${asymmetric ? 'Signing key' : 'Signing secret'}</h3>
    ${asymmetric && html`<p><${PublicKey} endpoint=${endpoint} /></p>`}
    ${endpoint.signing !== 'rsa2' && html`<${Secret} endpoint=${endpoint} />`}
    <h3>Test</h3>
    <${Test} key=${(endpoint.event_types || []).join(',')} endpoint=${endpoint} />
  </section>`;
}
