// What an operator hands out from an endpoint's page (docs/design.md
// §18): a portal link for its receiver, with the permissions and lifetime
// chosen here, and, for a pull endpoint, a consumer token. Each is shown
// once, to copy; hookd keeps neither.

import { html, useState, ErrorNote, time, ConfirmButton } from './ui.js';
import { post, path } from './api.js';

const LIFETIMES = [
  ['1 hour', 3600],
  ['1 day', 86400],
  ['7 days', 604800],
];

export function PortalLink({ endpoint }) {
  const [manage, setManage] = useState(false);
  const [retry, setRetry] = useState(true);
  const [lifetime, setLifetime] = useState(86400);
  const [issued, setIssued] = useState(null);
  const [error, setError] = useState(null);
  const [revoked, setRevoked] = useState(false);
  const revoke = async () => {
    setError(null);
    setIssued(null);
    try {
      await post(path`/v1/endpoints/${endpoint.id}/portal/revoke`);
      setRevoked(true);
    } catch (err) {
      setError(err);
    }
  };
  const issue = async (ev) => {
    ev.preventDefault();
    setError(null);
    setIssued(null);
    setRevoked(false);
    const permissions = ['read', ...(retry ? ['retry'] : []), ...(manage ? ['manage'] : [])];
    try {
      setIssued(await post(path`/v1/endpoints/${endpoint.id}/portal`, { permissions, expires_in_seconds: lifetime }));
    } catch (err) {
      setError(err);
    }
  };
  return html`<form class="inline" onSubmit=${issue} data-test="portal-link">
    <div class="field"><label for="pl-lifetime">Portal link for its receiver, valid for</label>
      <select id="pl-lifetime" value=${lifetime} onChange=${(e) => setLifetime(Number(e.target.value))} data-test="portal-link-lifetime">
        ${LIFETIMES.map(([label, seconds]) => html`<option value=${seconds}>${label}</option>`)}</select></div>
    <label class="check"><input type="checkbox" checked=${retry} onChange=${(e) => setRetry(e.target.checked)} data-test="portal-link-retry" /> may retry</label>
    <label class="check"><input type="checkbox" checked=${manage} onChange=${(e) => setManage(e.target.checked)} data-test="portal-link-manage" /> may change its URL, event types and secret</label>
    <button type="submit" data-test="portal-link-issue">Issue link</button>
    <${ConfirmButton} label="Revoke its links" test="portal-link-revoke" danger=${true}
      question=${`Refuse every portal link of ${endpoint.uid || endpoint.id} issued so far${endpoint.owner ? `, and every link of its owner ${endpoint.owner}` : ''}? Their holders need new ones.`}
      run=${revoke} />
    <${ErrorNote} error=${error} test="portal-link-error" />
    ${revoked && html`<p class="notice" role="status" data-test="portal-link-revoked">Every link issued so far, of this endpoint and of its owner, is refused.</p>`}
    ${issued && html`<p class="notice wide" role="status">Send this link to the receiver (it works until ${time(issued.expires_at)}; revoking the endpoint's links ends it sooner):
      <input readonly value=${issued.url} onFocus=${(e) => e.target.select()} data-test="portal-link-url" aria-label="The portal link" /></p>`}
  </form>`;
}

export function ConsumerToken({ endpoint }) {
  const [token, setToken] = useState(null);
  const [error, setError] = useState(null);
  const name = endpoint.uid || endpoint.id;
  const issue = async () => {
    setError(null);
    try {
      setToken((await post(path`/v1/endpoints/${endpoint.id}/consumer-token`)).token);
    } catch (err) {
      setError(err);
    }
  };
  return html`<div class="buttons" data-test="consumer-token">
    <${ConfirmButton} label="Issue consumer token" test="consumer-token-issue"
      question=${`Issue a new consumer token for ${name}? The one its consumer uses now stops working.`}
      run=${issue} />
    <${ErrorNote} error=${error} test="consumer-token-error" />
    ${token && html`<p class="notice" role="status">Consumer token (shown once; hookd keeps only its digest):
      <code data-test="consumer-token-value">${token}</code></p>`}
  </div>`;
}
