// The console's shell: sign-in (an API token, or a portal link's token
// from the URL fragment), the navigation, and the hash routes of
// CONTRACT36 §3. Each page reads the public REST API only.

import { html, render, useState, useEffect, ErrorNote } from './ui.js';
import { session, whoami, can } from './api.js';
import { Overview } from './overview.js';
import { NotificationSearch } from './notifications.js';
import { NotificationPage } from './notification.js';
import { EndpointList } from './endpoints.js';
import { EndpointPage } from './endpoint.js';
import { EventList } from './events.js';
import { EndpointName } from './names.js';

// A portal link carries its token in the fragment, which browsers never
// send to a server. It is kept for the session and removed from the
// address bar (and so from the history) at once.
function takePortalToken() {
  const match = /^#portal=(.+)$/.exec(location.hash);
  if (!match) return null;
  // `?portal` stays in the address: a bookmark or a new tab of it (whose
  // tab has no token) is known for a portal's page, and lands on
  // `PortalEnded` rather than an API-token sign-in a merchant cannot use.
  history.replaceState(null, '', `${location.pathname}?portal#/notifications`);
  // replaceState fires no hashchange: the route is told itself.
  window.dispatchEvent(new HashChangeEvent('hashchange'));
  // A link mangled on its way (a broken %-escape) is no link: the
  // sign-in page says so rather than a blank page.
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return 'malformed';
  }
}

function parseRoute() {
  const text = location.hash.replace(/^#/, '') || '/';
  const [path, search = ''] = text.split('?');
  return { parts: path.split('/').filter(Boolean), params: new URLSearchParams(search) };
}

function useRoute() {
  const [route, setRoute] = useState(parseRoute());
  useEffect(() => {
    const changed = () => setRoute(parseRoute());
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  return route;
}

function SignIn({ onSignedIn, notice }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const who = await whoami(token.trim());
      onSignedIn(token.trim(), who);
    } catch (err) {
      setError(err.status === 401 ? new Error('This token is not valid.') : err);
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="sign-in" id="main">
    <h1>hookd console</h1>
    ${notice && html`<p class="notice" role="status" data-test="notice">${notice}</p>`}
    <form onSubmit=${submit} data-test="sign-in">
      <label for="token">API token</label>
      <input id="token" type="password" autocomplete="off" required value=${token}
        onInput=${(e) => setToken(e.target.value)} data-test="token" autofocus />
      <p class="muted">Kept in this tab only, until you sign out or close it.</p>
      <button type="submit" disabled=${busy} data-test="sign-in-submit">Sign in</button>
      <${ErrorNote} error=${error} test="sign-in-error" />
    </form>
  </main>`;
}

// Whether this address came from a portal link (`takePortalToken`).
function portalAddress() {
  return new URLSearchParams(location.search).has('portal');
}

// What a portal's holder sees without a session: a bookmark, a new tab,
// after signing out, or a link hookd refused. Never an API-token
// sign-in: only the sender can give them a new link.
function PortalEnded({ notice }) {
  return html`<main class="sign-in" id="main" data-test="portal-ended">
    <h1>Webhook notifications</h1>
    ${notice && html`<p class="notice" role="status" data-test="notice">${notice}</p>`}
    <p>This page opens from a link you were sent. Links last a limited time
      and work in the tab they were opened in.</p>
    <p>To see your notifications again, open the link you were sent, or ask
      the sender for a new one.</p>
  </main>`;
}

// The deployment's name and logo (`[portal]` `name`, `logo_url`) before a
// portal's holder; "hookd" before an operator.
function Brand({ who }) {
  const brand = who.portal && who.brand;
  if (!who.portal) return html`<span class="brand">hookd</span>`;
  const name = (brand && brand.name) || 'Webhooks';
  return html`<span class="brand" data-test="brand">${brand && brand.logo_url
    && html`<img class="logo" src=${brand.logo_url} alt="" data-test="brand-logo" />`}${name}</span>`;
}

// A portal's accent colour (`portal.accent`) on the header and buttons,
// set through the CSS object model (the policy admits no inline style),
// and taken off again when the session ends.
function useAccent(who) {
  const accent = who && who.portal && who.brand && who.brand.accent;
  useEffect(() => {
    if (!accent) return undefined;
    const root = document.documentElement.style;
    root.setProperty('--top', accent);
    root.setProperty('--button', accent);
    return () => {
      root.removeProperty('--top');
      root.removeProperty('--button');
    };
  }, [accent]);
}

// The tab's title: the deployment's name before a portal's holder (a
// merchant's tab says whose webhooks they are), "hookd console" before an
// operator; back to the page's own when the session ends.
function useTitle(who) {
  const name = who && who.portal && ((who.brand && who.brand.name) || 'Webhooks');
  useEffect(() => {
    if (!name) return undefined;
    const before = document.title;
    document.title = name;
    return () => { document.title = before; };
  }, [name]);
}

function Nav({ who, onSignOut, parts }) {
  const here = parts[0] || '';
  const link = (path, label, test) => html`<a href=${`#/${path}`} data-test=${test}
    aria-current=${here === path ? 'page' : undefined}>${label}</a>`;
  const scope = who.portal
    ? who.portal.endpoint ? html`portal: <${EndpointName} id=${who.portal.endpoint} link=${false} />` : `portal: owner ${who.portal.owner}`
    : who.name || 'signed in';
  return html`<header class="top">
    <a class="skip" href="#main" onClick=${(e) => { e.preventDefault(); document.getElementById('main')?.focus(); }}>Skip to content</a>
    <${Brand} who=${who} />
    <nav aria-label="Console">
      ${link('', 'Overview', 'nav-overview')}
      ${link('notifications', 'Notifications', 'nav-notifications')}
      ${link('endpoints', 'Endpoints', 'nav-endpoints')}
      ${!who.portal && can(who, 'read') && link('events', 'Events', 'nav-events')}
    </nav>
    <span class="who" data-test="who">${scope}</span>
    <button type="button" onClick=${onSignOut} data-test="sign-out">Sign out</button>
  </header>`;
}

function Page({ route, who }) {
  const [first, second] = route.parts;
  const props = { who, params: route.params };
  if (!first) return html`<${Overview} ...${props} />`;
  // A page of one notification or endpoint is keyed by its id: another id
  // is another page, built afresh, so no notice, secret or form state of
  // one (a rotated secret, "Retry requested") is ever shown on another.
  if (first === 'notifications') {
    return second ? html`<${NotificationPage} key=${second} id=${second} ...${props} />` : html`<${NotificationSearch} ...${props} />`;
  }
  if (first === 'endpoints') {
    return second ? html`<${EndpointPage} key=${second} id=${second} ...${props} />` : html`<${EndpointList} ...${props} />`;
  }
  // Events are an operator's: a portal's holder who types `#/events` finds
  // no such page, as the nav shows none, rather than the API's refusal.
  if (first === 'events' && !who.portal && can(who, 'read')) return html`<${EventList} ...${props} />`;
  return html`<p data-test="not-found">No such page. <a href="#/">Overview</a></p>`;
}

function App() {
  const route = useRoute();
  const [who, setWho] = useState(session.token() !== null ? session.who() : null);
  const [notice, setNotice] = useState(null);
  const [checking, setChecking] = useState(false);

  const signOut = (message = null) => {
    session.clear();
    setWho(null);
    setNotice(message);
    history.replaceState(null, '', `${location.pathname}${location.search}#/`);
  };

  // A portal link opens the console (on load) or arrives in an open one
  // (a same-page link changes only the fragment).
  useEffect(() => {
    const check = () => {
      const portal = takePortalToken();
      if (!portal) return false;
      // A link opened in a tab an operator is signed in to leaves the
      // operator's session alone: any page could otherwise sign them out
      // (a bogus link) or into someone else's portal (a real one).
      const current = session.token() !== null ? session.who() : null;
      if (current && !current.portal) {
        history.replaceState(null, '', `${location.pathname}#/notifications`);
        setNotice('That was a portal link: it opens in a window of its own (a private window), or here once you sign out. This tab stays signed in as you.');
        return true;
      }
      setChecking(true);
      whoami(portal)
        .then((found) => {
          const portalWho = { ...found, portal: found.portal || { endpoint: null } };
          session.signIn(portal, portalWho);
          setWho(portalWho);
          setNotice(null);
        })
        .catch((error) => signOut(error.status === 401
          ? 'This portal link is not valid or has expired. Ask for a new one.'
          : error.message))
        .finally(() => setChecking(false));
      return true;
    };
    // The open mode (no tokens configured) needs no sign-in.
    if (!check() && session.token() === null) {
      whoami(null)
        .then((found) => {
          const local = { ...found, name: found.name || 'open mode (no token)' };
          session.signIn('', local);
          setWho(local);
        })
        .catch(() => {});
    }
    window.addEventListener('hashchange', check);
    return () => window.removeEventListener('hashchange', check);
  }, []);

  useEffect(() => {
    const expired = () => signOut('Your session ended (the token was refused). Sign in again.');
    window.addEventListener('hookd:unauthorized', expired);
    return () => window.removeEventListener('hookd:unauthorized', expired);
  }, []);

  useAccent(who);
  useTitle(who);
  if (checking) return html`<main id="main"><p class="muted">Checking the link…</p></main>`;
  if (!who && portalAddress()) return html`<${PortalEnded} notice=${notice} />`;
  if (!who) {
    return html`<${SignIn} notice=${notice} onSignedIn=${(token, found) => {
      session.signIn(token, found);
      setNotice(null);
      setWho(found);
    }} />`;
  }
  return html`<${Nav} who=${who} parts=${route.parts} onSignOut=${() => signOut('Signed out.')} />
    <main id="main" tabindex="-1">
      ${notice && html`<p class="notice" role="status" data-test="session-notice">${notice}
        <button type="button" onClick=${() => setNotice(null)} data-test="session-notice-dismiss">Dismiss</button></p>`}
      <${Page} route=${route} who=${who} /></main>`;
}

// What the page's policy refused, for the browser tests to see (and
// anyone in the developer tools): it should stay empty.
window.hookdPolicyViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.hookdPolicyViolations.push(`${e.violatedDirective} ${e.blockedURI}`);
});

// The loading note goes: Preact would keep it beside the app.
const root = document.getElementById('app');
root.textContent = '';
render(html`<${App} />`, root);
