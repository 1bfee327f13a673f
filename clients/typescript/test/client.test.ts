// The README's example as a test, against a running hookd: HOOKD_URL and
// HOOKD_TOKEN name it (tests/it/clients.rs starts one in each mode). A
// receiver of its own takes the delivery and verifies its signature with the
// Standard Webhooks library (`standardwebhooks` on npm), not hookd's code.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { hookd } from "../src/index.js";

interface Delivery {
  headers: Record<string, string>;
  body: string;
}

const received: Delivery[] = [];
const receiver = http.createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (typeof value === "string") headers[name] = value;
    }
    received.push({ headers, body: Buffer.concat(chunks).toString("utf8") });
    response.end("ok");
  });
});
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const port = (receiver.address() as AddressInfo).port;

/** Polls `check` every 20 ms until it gives a value, for at most 20 s. */
async function eventually<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const client = hookd({ baseUrl: process.env.HOOKD_URL!, token: process.env.HOOKD_TOKEN });

// An endpoint, a notification, its delivery and its attempts.
// A payload filter is written and read as the object it is (the document
// once typed it `Record<string, never>`, which took none).
const filter = { $or: [{ amount: { $gte: 10000 } }, { currency: "CNY" }] };
const created = await client.POST("/v1/endpoints", {
  body: { uid: `ts-${process.pid}-${Date.now()}`, url: `http://127.0.0.1:${port}/orders`, filter },
});
assert.equal(created.response.status, 201, JSON.stringify(created.error));
const endpoint = created.data!;
assert.deepEqual(endpoint.filter, filter);
assert.ok(endpoint.secret?.startsWith("whsec_"), "the admin token sees the secret");

const sent = await client.POST("/v1/notifications", {
  body: { endpoint: endpoint.uid!, key: "order-123:paid", payload: { order: 123, status: "paid" } },
});
assert.equal(sent.response.status, 201, JSON.stringify(sent.error));
const id = sent.data!.id;

const delivery = await eventually("the delivery", async () => received[0]);
const verified = new Webhook(endpoint.secret!).verify(delivery.body, delivery.headers);
assert.deepEqual(verified, { order: 123, status: "paid" });
assert.equal(delivery.headers["webhook-id"], id);
assert.throws(
  () => new Webhook(endpoint.secret!).verify(delivery.body.replace("paid", "refunded"), delivery.headers),
  "a changed body does not verify",
);

const attempts = await eventually("the recorded attempt", async () => {
  const { data } = await client.GET("/v1/notifications/{id}/attempts", { params: { path: { id } } });
  return data && data.data.length > 0 ? data.data : undefined;
});
assert.equal(attempts[0].status_code, 200);
const read = await client.GET("/v1/notifications/{id}", { params: { path: { id } } });
assert.equal(read.data?.status, "succeeded");

// A refusal comes back as the API's error shape, typed.
const refused = await client.POST("/v1/notifications", { body: { endpoint: "no-such-endpoint", payload: {} } });
assert.equal(refused.response.status, 422);
assert.equal(refused.error?.error.code, "unknown_endpoint");
assert.equal(refused.error?.error.field, "endpoint");

// A call whose body is optional, given none; a body-less POST refused,
// typed as any refusal.
const rotated = await client.POST("/v1/endpoints/{endpoint}/secret/rotate", {
  params: { path: { endpoint: endpoint.uid! } },
});
assert.equal(rotated.response.status, 200, JSON.stringify(rotated.error));
assert.ok(rotated.data?.secret?.startsWith("whsec_"));
const again = await client.POST("/v1/notifications/{id}/retry", { params: { path: { id } } });
assert.equal(again.response.status, 409);
assert.equal(again.error?.error.code, "not_retryable");

receiver.close();
console.log(`typescript client: endpoint ${endpoint.uid}, notification ${id} delivered and verified`);
