/**
 * The reference's order flow as the scenario knows it: orders created through the HTTP ingress,
 * their payments captured, the outbox's notification and stock reservations following. Whether a
 * pipeline has it is decided here, from its declaration, and nowhere else: the flow's three job
 * types and the orders and inventory tables its facts are read from. A pipeline without it runs
 * tenang's generic scenario only (the declared job types' jobs). The flow's names live here, in
 * the reference app; its scenario part is ./scenario-order-flow.ts.
 */
import type { PipelineConfig } from 'tenang/config';
import { deployedVariable, type DeployedFunctions } from 'tenang/local';

/** The job types the order flow makes, by their part in it. */
export const ORDER_FLOW_JOB_TYPES = {
  payment: 'payment.capture',
  notification: 'notification.send',
  inventory: 'inventory.reserve',
} as const;

/** The order flow's job type names. */
export const ORDER_FLOW_JOB_TYPE_NAMES: readonly string[] = Object.values(ORDER_FLOW_JOB_TYPES);

/** The tables the order flow's facts are read from (its orders and their stock). */
export const ORDER_FLOW_TABLES: readonly string[] = ['orders', 'inventory'];

/** The reference's own functions the order flow's traffic goes through (not in the declaration). */
export const ORDER_FLOW_FUNCTIONS = {
  ingress: 'ingress',
  reader: 'order-reader',
  outbox: 'outbox-relay',
} as const;

/**
 * Whether the declaration holds the reference's order flow: its three job types and the orders
 * and inventory tables. The one place the scenario decides which of its parts run.
 */
export function declaresOrderFlow(config: Pick<PipelineConfig, 'jobTypes' | 'tables'>): boolean {
  const jobTypes = new Set(config.jobTypes.map((j) => j.name));
  const tables = new Set(config.tables.map((t) => t.name));
  return (
    ORDER_FLOW_JOB_TYPE_NAMES.every((name) => jobTypes.has(name)) &&
    ORDER_FLOW_TABLES.every((name) => tables.has(name))
  );
}

/** The job types whose traffic the order flow makes, when the declaration has it; none otherwise. */
export function orderFlowJobTypes(config: Pick<PipelineConfig, 'jobTypes' | 'tables'>): readonly string[] {
  return declaresOrderFlow(config) ? ORDER_FLOW_JOB_TYPE_NAMES : [];
}

/** What the order flow's part of the scenario addresses in the deployment. */
export interface OrderFlowTargets<J extends { readonly name: string; readonly functionName: string }> {
  readonly payment: J;
  readonly notification: J;
  readonly inventory: J;
  /** The orders table (the ingress's ORDERS_TABLE). */
  readonly ordersTable: string;
  /** The stock table (the inventory consumer's INVENTORY_TABLE). */
  readonly inventoryTable: string;
  /** The outbox relay's service name (its DuplicateIgnored counts follow-ups not enqueued twice). */
  readonly outboxService: string;
}

/**
 * The order flow's targets among the deployment's job types (call it when declaresOrderFlow):
 * its three job types, the tables its facts are read from, the ingress its traffic goes through.
 * @throws Error naming what the deployment lacks (e.g. the reference's ingress function)
 */
export function resolveOrderFlowTargets<J extends { readonly name: string; readonly functionName: string }>(
  deployed: DeployedFunctions,
  jobTypes: readonly J[],
): OrderFlowTargets<J> {
  const find = (name: string): J => {
    const found = jobTypes.find((j) => j.name === name);
    if (found === undefined) throw new Error(`the order flow's job type ${name} is not deployed`);
    return found;
  };
  const payment = find(ORDER_FLOW_JOB_TYPES.payment);
  const notification = find(ORDER_FLOW_JOB_TYPES.notification);
  const inventory = find(ORDER_FLOW_JOB_TYPES.inventory);
  const ingress = deployed.functionNamed(ORDER_FLOW_FUNCTIONS.ingress);
  return {
    payment,
    notification,
    inventory,
    ordersTable: deployedVariable(deployed, ingress, 'ORDERS_TABLE'),
    inventoryTable: deployedVariable(deployed, inventory.functionName, 'INVENTORY_TABLE'),
    outboxService: ORDER_FLOW_FUNCTIONS.outbox,
  };
}
