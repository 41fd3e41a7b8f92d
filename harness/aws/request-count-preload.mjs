// Preloaded (node --import) into a local function instance by bench/handler-time.ts: counts the
// HTTP requests the function starts by AWS operation (the X-Amz-Target header of the JSON
// protocols: DynamoDB, SQS, SSM), with the time each took to its response, whether the bundle
// carries its own SDK or loads the runtime's (a middleware would see only one copy). Requests
// without the header print as `other` (a provider's fetch does not go through node:http at all).
// The running totals are printed as one line every FLUSH_MS while they change, not per request:
// a write per request would itself add to the handler's time.
import http from 'node:http';
import https from 'node:https';
import { syncBuiltinESMExports } from 'node:module';
import { performance } from 'node:perf_hooks';
import { setInterval } from 'node:timers';

/** The prefix of the lines it prints: REQUEST_LINE_PREFIX in bench/handler-time.ts. */
const PREFIX = '@@tenang-requests ';
const FLUSH_MS = 100;

/** Operation → [requests, ms to their responses]. */
const totals = {};
let changed = false;

function targetOf(args) {
  for (const arg of args) {
    const headers = arg !== null && typeof arg === 'object' ? arg.headers : undefined;
    if (headers === undefined || headers === null || typeof headers !== 'object') continue;
    for (const [name, value] of Object.entries(headers))
      if (name.toLowerCase() === 'x-amz-target') return String(value);
  }
  return 'other';
}

for (const mod of [http, https]) {
  const original = mod.request;
  mod.request = function request(...args) {
    const target = targetOf(args);
    const started = performance.now();
    const entry = (totals[target] ??= [0, 0]);
    entry[0] += 1;
    changed = true;
    const req = original.apply(this, args);
    req.once('response', () => {
      entry[1] += performance.now() - started;
      changed = true;
    });
    return req;
  };
}
// ES modules that import { request } from 'node:http' see the wrapper too.
syncBuiltinESMExports();

setInterval(() => {
  if (!changed) return;
  changed = false;
  process.stdout.write(`${PREFIX}${JSON.stringify(totals)}\n`);
}, FLUSH_MS).unref();
