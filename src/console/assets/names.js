// Endpoints by name: wherever a page shows an endpoint it shows its uid,
// owner and description (docs/design.md §18), never a bare id. The API's
// notifications, attempts and stats carry the endpoint's id only; each id
// is read once (`GET /v1/endpoints/{id}`) and kept for a minute, so a list
// of fifty notifications over eight endpoints costs eight reads.

import { html, useState, useEffect, shortId } from './ui.js';
import { get, path, session } from './api.js';

const KEPT_MS = 60_000;
// id → { at, token, read: Promise<endpoint | null> }
const known = new Map();

export function read(id) {
  const token = session.token();
  const kept = known.get(id);
  if (kept && kept.token === token && Date.now() - kept.at < KEPT_MS) return kept.read;
  // An endpoint this token may not read, or deleted: shown by its id.
  const reading = get(path`/v1/endpoints/${id}`).catch(() => null);
  // A long session over many endpoints starts the list again.
  if (known.size >= 1000) known.clear();
  known.set(id, { at: Date.now(), token, read: reading });
  return reading;
}

// The endpoint `id` as a link to its page: uid (or a short id), then its
// owner and description. The full id is the link's title, and what a
// copy of the link's text gives.
export function EndpointName({ id, link = true, test }) {
  // undefined while read; null once read as none (deleted, or not this
  // sign-in's to read).
  const [endpoint, setEndpoint] = useState(undefined);
  useEffect(() => {
    let live = true;
    if (id) read(id).then((found) => live && setEndpoint(found));
    return () => { live = false; };
  }, [id]);
  if (!id) return '—';
  const name = (endpoint && endpoint.uid) || shortId(id);
  const about = endpoint === null
    ? 'deleted, or not readable here'
    : endpoint && [endpoint.owner, endpoint.description].filter(Boolean).join(' · ');
  const copyFull = (e) => {
    e.clipboardData.setData('text/plain', id);
    e.preventDefault();
  };
  const label = html`<span class="endpoint-name" data-test=${test} onCopy=${copyFull}>${name}</span>`;
  const whole = endpoint && endpoint.uid ? `${endpoint.uid} (${id})` : id;
  return html`${link ? html`<a href=${`#/endpoints/${id}`} title=${whole}>${label}</a>` : html`<span title=${whole}>${label}</span>`}${about && html` <span class="muted endpoint-about" title=${about}>${about}</span>`}`;
}
