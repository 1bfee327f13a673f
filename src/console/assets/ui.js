// Shared pieces of the console: the html tag, time formatting, status
// badges, loading with refresh, paging and messages.

import { h, render } from './vendor/preact.mjs';
import { useState, useEffect, useRef, useCallback } from './vendor/hooks.mjs';
import htm from './vendor/htm.mjs';

export const html = htm.bind(h);
export { render, useState, useEffect, useRef, useCallback };

// Times in UTC, as hookd's API and logs give them.
export function time(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function duration(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

export function relative(iso, now) {
  const ms = new Date(iso).getTime() - now;
  if (Math.abs(ms) < 1000) return 'now';
  return ms > 0 ? `in ${duration(ms)}` : `${duration(ms)} ago`;
}

// When a pending notification `n` goes next, as a list or a timeline
// says it. One held (an open circuit, a rate limit's slot, its key's line,
// a disabled endpoint, a pull consumer) says so, and when it may go where
// that is known (`waiting.until`), rather than a `next_attempt_at` that
// passed: a merchant read "5m ago" beside an open circuit as "it should
// have gone five minutes ago".
const HELD = {
  circuit_open: 'circuit open, probe',
  rate_limit: 'rate limit, slot',
  ordering: 'behind its key',
  endpoint_disabled: 'endpoint disabled',
  pull: 'waiting for a consumer',
};
export function nextLabel(n, now) {
  const held = n.waiting && HELD[n.waiting.reason];
  if (held) return n.waiting.until ? `${held} ${relative(n.waiting.until, now)}` : held;
  return n.next_attempt_at ? relative(n.next_attempt_at, now) : '—';
}

// A clock that ticks every `ms`, for countdowns.
export function useNow(ms = 1000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}

// Loads with `load()` when `key` changes, and again every `every` ms
// when given. A failed refresh keeps the data shown with its error.
export function useLoad(load, key, every) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const generation = useRef(0);
  const run = useCallback(async () => {
    const mine = ++generation.current;
    try {
      const data = await load();
      if (mine === generation.current) setState({ data, error: null, loading: false });
    } catch (error) {
      if (mine === generation.current) setState((s) => ({ data: s.data, error, loading: false }));
    }
  }, [key]);
  useEffect(() => {
    setState({ data: null, error: null, loading: true });
    run();
    if (!every) return () => generation.current++;
    const timer = setInterval(run, every);
    return () => {
      clearInterval(timer);
      generation.current++;
    };
  }, [key, every]);
  return { ...state, reload: run };
}

export function Status({ status }) {
  return html`<span class=${`badge badge-${status}`} data-test="status">${status}</span>`;
}

export function ErrorNote({ error, test = 'error' }) {
  if (!error) return null;
  const field = error.field ? ` (${error.field})` : '';
  return html`<p class="error" role="alert" data-test=${test}>${error.message}${field}</p>`;
}

export function Loading({ what }) {
  return html`<p class="muted" aria-live="polite">Loading ${what}…</p>`;
}

export function Empty({ children }) {
  return html`<p class="muted" data-test="empty">${children}</p>`;
}

// Next/first page over a cursor kept in the route's query.
export function Pager({ next, cursor, go }) {
  if (!next && !cursor) return null;
  return html`<nav class="pager" aria-label="Pages">
    <button type="button" disabled=${!cursor} onClick=${() => go(null)} data-test="first-page">First page</button>
    <button type="button" disabled=${!next} onClick=${() => go(next)} data-test="next-page">Next page</button>
  </nav>`;
}

// A labelled row of a definition list.
export function Row({ label, children, test }) {
  return html`<div class="row"><dt>${label}</dt><dd data-test=${test}>${children}</dd></div>`;
}

export function shortId(id) {
  return id ? `${id.slice(0, 8)}…${id.slice(-4)}` : '—';
}

// An RFC 3339 time from a datetime-local input (read as UTC), or ''.
export function fromLocalInput(value) {
  if (!value) return '';
  const d = new Date(value.length === 16 ? `${value}:00Z` : `${value}Z`);
  return Number.isNaN(d.getTime()) ? value : d.toISOString();
}

// A datetime-local value (UTC) from RFC 3339, or ''.
export function toLocalInput(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString().slice(0, 16);
}

export function setRoute(path, params = {}) {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') q.set(name, value);
  }
  const text = q.toString();
  location.hash = `#${path}${text ? `?${text}` : ''}`;
}

// A button for an action that cannot be taken back (rotate a secret,
// disable, cancel, recover, retry in bulk): its first click only asks,
// saying what the action will touch (`question`, or what `ask` answers:
// an async function giving `{ text, nothing }`, a count read first, with
// the confirm held back while it reads or when there is nothing to do);
// the action runs on a second, explicit click of `data-test="confirm"`,
// and "Not now" puts the button back.
export function ConfirmButton({ label, question, ask, run, test, disabled, danger }) {
  const [asking, setAsking] = useState(false);
  const [asked, setAsked] = useState(null);
  // The keyboard follows the question: "Not now" (the harmless answer)
  // takes the focus when it is asked, Escape answers it, and the focus goes
  // back to the button that asked. The buttons are replaced as the question
  // opens and closes, which once left the focus on the page's body.
  const asker = useRef(null);
  const notNow = useRef(null);
  const wasAsking = useRef(false);
  useEffect(() => {
    if (asking && notNow.current) notNow.current.focus();
    if (!asking && wasAsking.current && asker.current) asker.current.focus();
    wasAsking.current = asking;
  }, [asking]);
  const open = async () => {
    setAsking(true);
    setAsked(null);
    if (!ask) return;
    try {
      setAsked(await ask());
    } catch (error) {
      setAsked({ error });
    }
  };
  if (!asking) {
    return html`<button type="button" class=${danger ? 'danger' : undefined} disabled=${disabled}
      data-test=${test} onClick=${open} ref=${asker}>${label}</button>`;
  }
  const ready = !ask || (asked && !asked.error && !asked.nothing);
  const text = !ask ? question : !asked ? 'Counting…' : asked.error ? '' : asked.text;
  const escape = (e) => {
    if (e.key !== 'Escape') return;
    e.preventDefault();
    setAsking(false);
  };
  return html`<span class="confirm" role="group" aria-label=${label} data-test=${`${test}-question`} onKeyDown=${escape}>
    <span class="question" role="status">${text}</span>
    ${asked && asked.error && html`<${ErrorNote} error=${asked.error} />`}
    <button type="button" class="danger" data-test="confirm" disabled=${!ready}
      onClick=${() => { setAsking(false); run(); }}>${label}</button>
    <button type="button" class="secondary" data-test="confirm-not-now" ref=${notNow} onClick=${() => setAsking(false)}>Not now</button>
  </span>`;
}
