/**
 * The reference app's extensions (cdk.json's `tenang:extensions`): the scenario's order flow —
 * payments through the HTTP API, their notifications and reservations through the outbox, its
 * incidents, invariants and report sections — beside the jobs tenang's scenario makes for every
 * declared job type, and the stock `tenang local up` seeds.
 */
import { defineExtensions } from 'tenang/local';
import { orderScenarioFlow } from './scenario-order-flow';

export default defineExtensions({ scenarioFlow: orderScenarioFlow });
