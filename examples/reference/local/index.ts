/**
 * The reference app's extensions (cdk.json's `tenang:extensions`):
 * - the drills of its own domain's incidents, and where tenang's drills that take any job type
 *   play in it — on notification.send, the sheddable consumer a pause costs least, and on
 *   payment.capture where the incident is about a critical FIFO queue — with jobs its orders make
 *   (drills/order-jobs.ts);
 * - the scenario's order flow — payments through the HTTP API, their notifications and
 *   reservations through the outbox, its incidents, invariants and report sections — beside the
 *   jobs tenang's scenario makes for every declared job type, and the stock `tenang local up`
 *   seeds.
 */
import { defineExtensions } from 'tenang/local';
import { duplicates } from '../drills/duplicates';
import { captures, orderNotifications } from '../drills/order-jobs';
import { staleCache } from '../drills/stale-cache';
import { streamFailures } from '../drills/stream-failures';
import { stuckLock } from '../drills/stuck-lock';
import { orderScenarioFlow } from './scenario-order-flow';

export default defineExtensions({
  drills: [stuckLock, duplicates, staleCache, streamFailures],
  drillJobTypes: {
    'retry-storm': 'notification.send',
    backlog: 'notification.send',
    'dlq-not-empty': 'payment.capture',
    'stuck-jobs': 'payment.capture',
    'pause-overdue': 'notification.send',
    'flag-reconciler': 'notification.send',
    'permission-denied': 'notification.send',
  },
  drillJobs: {
    'payment.capture': captures,
    'notification.send': orderNotifications,
  },
  scenarioFlow: orderScenarioFlow,
});
