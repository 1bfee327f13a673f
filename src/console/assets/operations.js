// An operation (a recover, a retry or cancel by filter) followed to its end, and
// the dry-run count a confirmation asks for before one starts.

import { html, useEffect, useLoad, ErrorNote, time } from './ui.js';
import { get, post, path } from './api.js';

// Polls `GET /v1/operations/{id}` each second until it ends.
export function Operation({ id, onDone }) {
  const op = useLoad(() => get(path`/v1/operations/${id}`), id, 1000);
  const o = op.data;
  useEffect(() => {
    if (o && o.status !== 'running' && onDone) onDone();
  }, [o && o.status]);
  if (!o) return op.error ? html`<${ErrorNote} error=${op.error} />` : null;
  const what = {
    retry: () => `Retry ${o.status}: ${o.started} of ${o.matched} matching failed notifications restarted`,
    cancel: () => `Cancel ${o.status}: ${o.started} of ${o.matched} matching pending notifications cancelled`,
  }[o.kind] || (() => `Recover ${o.status}: ${o.started} of ${o.matched} failed notifications restarted (${time(o.since)} to ${time(o.until)})`);
  return html`<p class="notice" role="status" data-test="operation">${what()}${o.error ? `; ${o.error}` : ''}.</p>`;
}

// What a confirmation says before `url` runs with `body`: its dry run's
// count, in `say(n)`, or `none` when nothing matches.
export async function counted(url, body, say, none = 'No failed notification matches: nothing to send again.') {
  const { matched } = await post(url, { ...body, dry_run: true });
  if (!matched) return { text: none, nothing: true };
  return { text: say(matched) };
}
