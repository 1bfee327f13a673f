// hookd's REST API, typed from its OpenAPI document (`src/schema.ts`, made by
// openapi-typescript; regenerate with `scripts/clients generate` from the
// repository's root). Calls go through openapi-fetch: `client.POST(path, …)`
// with the path, parameters, body and answers checked by TypeScript.
import createClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { components, operations, paths } from "./schema.js";

export type { components, operations, paths };
/** The API's named types: `Schemas["EndpointView"]`, `Schemas["CreateNotification"]`… */
export type Schemas = components["schemas"];
export type HookdClient = Client<paths>;

export interface HookdOptions extends Omit<ClientOptions, "baseUrl"> {
  /** Where hookd listens, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** A token of `api.tokens`; none for hookd's open mode (loopback, no tokens). */
  token?: string;
}

/**
 * A client for the hookd at `baseUrl`, sending `token` as a bearer token.
 * Every request says `content-type: application/json`, a body-less POST (a
 * retry, a cancel) too: in open mode hookd answers 415 to a POST without it.
 */
export function hookd({ baseUrl, token, headers, ...options }: HookdOptions): HookdClient {
  const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  return createClient<paths>({
    baseUrl,
    ...options,
    headers: {
      "content-type": "application/json",
      ...auth,
      ...(headers as Record<string, string> | undefined),
    },
  });
}
