/**
 * The reference's order flow as tenang's scenario runs it (examples/reference/local): which
 * declarations hold it, the targets it resolves from the deployment, and the incidents it plans
 * for each of tenang's scenarios.
 */
import { loadPipelineConfig, type PipelineConfig } from '../../../../lib/config';
import { SCENARIOS } from '../../../../lib/local/scenario';
import { resolveScenarioTargets, type DeployedPipeline } from '../../../../lib/local/scenario-targets';
import {
  declaresOrderFlow,
  ORDER_FLOW_JOB_TYPE_NAMES,
  orderFlowJobTypes,
  resolveOrderFlowTargets,
} from '../../../../examples/reference/local/order-flow';
import { ORDER_FLOW_INCIDENTS } from '../../../../examples/reference/local/scenario-order-flow';
import { referencePipeline } from '../../../../examples/reference/pipeline';
import { ownAppDeclaration } from '../../../fixtures/own-app';

const reference = loadPipelineConfig(referencePipeline('dev', 'us-east-1'));
const ownApp = loadPipelineConfig(ownAppDeclaration('dev', 'us-east-1'));

/** A deployment of `config` as a LocalPlatform holds it: one function per consumer, `extra` beside them. */
function deployed(
  config: PipelineConfig,
  extra: Readonly<Record<string, Readonly<Record<string, string>>>> = {},
): DeployedPipeline {
  const fn = (logical: string): string => `tenang-dev-${logical}`;
  const functions = new Map<string, { environment: Readonly<Record<string, string>> }>();
  for (const j of config.jobTypes)
    functions.set(fn(j.consumer), {
      environment: { DLQ_URL: `https://sqs.test/${j.consumer}-dlq`, ...extra[j.consumer] },
    });
  for (const c of config.streamConsumers) functions.set(fn(c.consumer), { environment: {} });
  for (const [logical, environment] of Object.entries(extra))
    if (!functions.has(fn(logical))) functions.set(fn(logical), { environment });
  return {
    config,
    deployment: { functions },
    sqsSources: config.jobTypes.map((j) => ({
      spec: {
        functionName: fn(j.consumer),
        queueUrl: `https://sqs.test/${j.consumer}`,
        uuid: `uuid-${j.consumer}`,
      },
    })),
    streamSources: config.streamConsumers.map((c) => ({
      spec: { functionName: fn(c.consumer), onFailureQueueUrl: `https://sqs.test/${c.consumer}-failures` },
    })),
    functionNamed: (suffix) => {
      const found = [...functions.keys()].find((n) => n.endsWith(`-${suffix}`));
      if (found === undefined) throw new Error(`no deployed function named *-${suffix}`);
      return found;
    },
  };
}

/** The reference's deployment: its ingress and inventory consumer name the order flow's tables. */
const REFERENCE_EXTRA = {
  ingress: { ORDERS_TABLE: 'tenang-dev-orders' },
  'inventory-consumer': { INVENTORY_TABLE: 'tenang-dev-inventory' },
};

describe('Module: order-flow', () => {
  describe('Function: declaresOrderFlow', () => {
    it('when the declaration is the reference, it has the order flow; an app of its own has not', () => {
      expect(declaresOrderFlow(reference)).toBe(true);
      expect(declaresOrderFlow(ownApp)).toBe(false);
    });

    it('when the order flow’s job types are declared without the orders table, it is not the order flow', () => {
      // Prepare
      const input = referencePipeline('dev', 'us-east-1');
      const withoutOrders = {
        ...reference,
        tables: reference.tables.filter((t) => t.name !== 'orders'),
      };

      // Act & Assess
      expect(declaresOrderFlow(withoutOrders)).toBe(false);
      expect(declaresOrderFlow({ ...reference, jobTypes: reference.jobTypes.slice(1) })).toBe(false);
      expect(input.jobTypes.map((j) => j.name)).toEqual(
        expect.arrayContaining([...ORDER_FLOW_JOB_TYPE_NAMES]),
      );
    });
  });
});

describe('Function: resolveOrderFlowTargets', () => {
  it('when the pipeline has the order flow, its targets are resolved and no job type gets sample traffic', () => {
    // Act
    const d = deployed(reference, REFERENCE_EXTRA);
    const targets = resolveScenarioTargets(d, orderFlowJobTypes(reference));

    // Assess
    expect(resolveOrderFlowTargets(d, targets.jobTypes)).toMatchObject({
      payment: { name: 'payment.capture', functionName: 'tenang-dev-payment-consumer' },
      notification: { name: 'notification.send' },
      inventory: { name: 'inventory.reserve', queueUrl: 'https://sqs.test/inventory-consumer' },
      ordersTable: 'tenang-dev-orders',
      inventoryTable: 'tenang-dev-inventory',
      outboxService: 'outbox-relay',
    });
    expect(targets.declared).toEqual([]);
    expect(targets.streams.map((s) => s.consumer)).toEqual(['cache-invalidator', 'outbox-relay']);
  });

  it('when the order flow is declared but the reference’s ingress is not deployed, it says what is missing', () => {
    // Prepare
    const d = deployed(reference);

    // Act & Assess
    expect(() => resolveOrderFlowTargets(d, resolveScenarioTargets(d).jobTypes)).toThrow(
      'no deployed function named *-ingress',
    );
  });
});

describe('Object: ORDER_FLOW_INCIDENTS', () => {
  it.each(Object.values(SCENARIOS).map((s) => [s.name, s] as const))(
    'when %s runs for its own duration, every incident starts and ends within the traffic',
    (_, scenario) => {
      // Act
      const incidents = ORDER_FLOW_INCIDENTS[scenario.name]?.(scenario.durationSeconds) ?? [];

      // Assess
      for (const i of incidents)
        expect(i.atSeconds + (i.durationSeconds ?? 0)).toBeLessThan(scenario.durationSeconds);
    },
  );

  it('when default and smoke run, each injects the five incidents of the order flow', () => {
    // Act
    const kinds = (name: string): string[] =>
      (ORDER_FLOW_INCIDENTS[name]?.(SCENARIOS[name]?.durationSeconds ?? 0) ?? []).map((i) => i.kind).sort();

    // Assess
    const all = ['consumer-crash', 'duplicate-burst', 'poison-message', 'provider-outage', 'redis-down'];
    expect(kinds('default')).toEqual(all);
    expect(kinds('smoke')).toEqual(all);
  });
});
