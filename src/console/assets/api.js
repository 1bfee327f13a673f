// hookd's REST API, called with the signed-in token. The token lives in
// sessionStorage only: it goes when the tab closes, and never in a URL.

const TOKEN = 'hookd.token';
const WHO = 'hookd.who';

// `token()` is null when signed out, '' in the open mode (no tokens
// configured: hookd answers this machine without one).
export const session = {
  token: () => sessionStorage.getItem(TOKEN),
  who() {
    try {
      return JSON.parse(sessionStorage.getItem(WHO) || 'null');
    } catch {
      return null;
    }
  },
  signIn(token, who) {
    sessionStorage.setItem(TOKEN, token);
    sessionStorage.setItem(WHO, JSON.stringify(who));
  },
  clear() {
    sessionStorage.removeItem(TOKEN);
    sessionStorage.removeItem(WHO);
  },
};

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `hookd answered ${status}`);
    this.status = status;
    this.code = error.code || null;
    this.field = error.field || null;
    this.body = body;
  }
}

export async function api(method, path, body, token = session.token()) {
  return (await call(method, path, body, token)).data;
}

// A GET's parsed answer and its text, whose exact spelling of a stored
// payload (`rawMember`) parsing would lose.
export const getWithText = (path) => call('GET', path, undefined, session.token());

async function call(method, path, body, token) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, credentials: 'omit', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (cause) {
    throw new ApiError(0, { error: { message: `hookd cannot be reached (${cause.message})` } });
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    // The signed-in token refused (revoked, or a portal link expired).
    if (response.status === 401 && session.token() !== null && token === session.token()) {
      window.dispatchEvent(new CustomEvent('hookd:unauthorized'));
    }
    throw new ApiError(response.status, data);
  }
  return { data, text };
}

// The exact text of member `name` of the object that JSON `text` is, or
// null: a stored payload as hookd sent it, which JSON.parse would re-spell
// (numbers past 2^53, spacing, key order of duplicates).
export function rawMember(text, name) {
  let i = 0;
  const space = () => { while (i < text.length && ' \t\r\n'.includes(text[i])) i++; };
  const string = () => {
    const start = i++;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i));
  };
  // One value, from its first character to just past its last.
  const value = () => {
    const start = i;
    let depth = 0;
    for (;;) {
      const c = text[i];
      if (c === undefined) throw new Error('the text ends inside a value');
      if (c === '"') {
        string();
        if (depth === 0) break;
      } else if (c === '{' || c === '[') {
        depth++;
        i++;
      } else if (c === '}' || c === ']') {
        if (depth === 0) break;
        depth--;
        i++;
        if (depth === 0) break;
      } else if (c === ',' && depth === 0) {
        break;
      } else {
        i++;
      }
    }
    return text.slice(start, i).trim();
  };
  try {
    space();
    if (text[i] !== '{') return null;
    i++;
    for (;;) {
      space();
      if (text[i] !== '"') return null;
      const key = string();
      space();
      if (text[i] !== ':') return null;
      i++;
      space();
      const found = value();
      if (key === name) return found;
      space();
      if (text[i] !== ',') return null;
      i++;
    }
  } catch {
    return null;
  }
}

// An API path whose every interpolated value is one path segment,
// percent-encoded: route parameters come from the address bar, which
// anyone can link, so none may add segments (`/`, or `\` that the URL
// parser reads as one), climb with `..`, or start a query or fragment
// (`?`, `#`). A value that is empty, `.` or `..` (which encoding leaves
// as it is) names nothing: refused as a 404, never sent.
export function path(strings, ...values) {
  let out = strings[0];
  values.forEach((value, i) => {
    const text = String(value);
    if (text === '' || text === '.' || text === '..') {
      throw new ApiError(404, { error: { code: 'not_found', message: 'No such page.' } });
    }
    out += encodeURIComponent(text) + strings[i + 1];
  });
  return out;
}

export const get = (path) => api('GET', path);
export const post = (path, body) => api('POST', path, body === undefined ? {} : body);
export const patch = (path, body) => api('PATCH', path, body);

// A query string from the non-empty values of `params`.
export function query(params) {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') q.set(name, value);
  }
  const text = q.toString();
  return text ? `?${text}` : '';
}

// Who a token is. `GET /v1/whoami` tells; a hookd without it is asked
// for one endpoint instead, and then the scopes are unknown (the server
// still refuses what the token may not do).
export async function whoami(token) {
  try {
    return await api('GET', '/v1/whoami', undefined, token);
  } catch (error) {
    if (error.status === 401) throw error;
    try {
      await api('GET', '/v1/endpoints?limit=1', undefined, token);
    } catch (fallback) {
      if (fallback.status !== 403) throw fallback;
    }
    return { name: null, scopes: null, portal: null, expires_at: null };
  }
}

// Whether the caller may do what needs `scope`. A portal caller reads,
// and retries and manages its endpoints as its link's permissions say (a
// hookd that names none: read and retry); an operator never `manage`s
// (that is a portal's word: an admin edits the whole policy). Unknown
// scopes show everything.
export function can(who, scope) {
  if (!who) return false;
  if (who.portal) {
    const held = who.permissions || ['read', 'retry'];
    return held.includes(scope);
  }
  if (scope === 'manage') return false;
  if (scope === 'retry') scope = 'write';
  if (!who.scopes) return true;
  return who.scopes.includes('admin') || who.scopes.includes(scope);
}
