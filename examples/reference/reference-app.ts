/**
 * The reference app: the pipeline of its declaration (pipeline.ts) plus what it adds of its own,
 * the HTTP ingress (an HTTP API with IAM authorization; POST routes to the ingress function,
 * which creates orders and enqueues payment captures, GET to the cache-aside order reader),
 * built on the stack's public parts: its tables, a job type's queue, the cache and the degrade
 * flag.
 */
import { CfnOutput, type App } from 'aws-cdk-lib';
import { buildApp, grantSend, Ingress, lambdaEntry, type BuiltApp, type PipelineStack } from 'tenang/infra';
import { referencePipeline } from './pipeline';

/** The reference app's stack, with its ingress. */
export interface ReferenceApp extends BuiltApp {
  readonly ingress: Ingress;
}

/** Orders are created (PutItem) and read (GetItem); Idempotency-Key claims are put and given back. */
const INGRESS_TABLES = { orders: ['GetItem', 'PutItem'], dedup: ['PutItem', 'DeleteItem'] } as const;
/** The reader's cache-aside miss reads the order. */
const READER_TABLES = { orders: ['GetItem'] } as const;

/** Adds the reference's HTTP ingress to a pipeline stack built from referencePipeline. */
export function addIngress(stack: PipelineStack): Ingress {
  const { config, cache } = stack;
  const common = { TENANG_STAGE: config.stage.name };
  const payment = stack.workerQueue('payment.capture').queue;
  // The construct id 'Ingress' on the stack keeps the logical ids it had inside PipelineStack.
  const ingress = new Ingress(stack, 'Ingress', {
    ingressEntry: lambdaEntry('ingress'),
    readerEntry: lambdaEntry('order-reader'),
    ingressEnvironment: {
      ...common,
      ...stack.tableEnvironment(INGRESS_TABLES),
      PAYMENT_QUEUE_URL: payment.queueUrl,
      DEGRADE_FLAG: config.degradeFlagName,
    },
    readerEnvironment: {
      ...common,
      ...stack.tableEnvironment(READER_TABLES),
      ...cache.connectionEnvironment,
    },
    readerVpc: cache.functionPlacement,
  });
  stack.grantTables(INGRESS_TABLES, ingress.ingress.function);
  grantSend(payment, ingress.ingress.function);
  stack.grantDegradeFlagRead(ingress.ingress.function);
  stack.grantTables(READER_TABLES, ingress.reader.function);
  cache.grantConnect(ingress.reader.function);
  // moto skips the HTTP API (the local platform serves its routes), so no output refers to it there.
  if (stack.traits.target === 'aws') new CfnOutput(stack, 'ApiUrl', { value: ingress.api.apiEndpoint });
  return ingress;
}

/** Builds the reference app in `app`: buildApp with the reference's declaration, then its ingress. */
export function referenceApp(
  app: App,
  region: string,
  opts: { readonly appDir?: string } = {},
): ReferenceApp {
  const built = buildApp(app, referencePipeline, region, opts);
  return { ...built, ingress: addIngress(built.stack) };
}
