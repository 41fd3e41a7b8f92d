/**
 * The reference app: the pipeline of its declaration (pipeline.ts) plus what it adds of its own,
 * the HTTP ingress (an HTTP API with IAM authorization; POST routes to the ingress function,
 * which creates orders and enqueues payment captures, GET to the cache-aside order reader),
 * built on the stack's public parts: its tables, a job type's queue, the cache and the degrade
 * flag.
 */
import * as path from 'node:path';

import { CfnOutput, type App } from 'aws-cdk-lib';
import { buildApp, grantSend, type BuiltApp, type PipelineStack } from 'tenang/infra';
import { Ingress } from './domain/ingress';
import { referencePipeline } from './pipeline';

/** The reference app's stack, with its ingress. */
export interface ReferenceApp extends BuiltApp {
  readonly ingress: Ingress;
}

/** Orders are created (PutItem) and read (GetItem); Idempotency-Key claims are put and given back. */
const INGRESS_TABLES = { orders: ['GetItem', 'PutItem'], dedup: ['PutItem', 'DeleteItem'] } as const;
/** The reader's cache-aside miss reads the order. */
const READER_TABLES = { orders: ['GetItem'] } as const;

/** The reference's own function `name`: functions/<name>.ts of the app's directory. */
function functionEntry(appDir: string, name: string): string {
  return path.join(appDir, 'functions', `${name}.ts`);
}

/**
 * Adds the reference's HTTP ingress to a pipeline stack built from referencePipeline; its
 * functions' modules are under `appDir` (default: this file's directory).
 */
export function addIngress(stack: PipelineStack, appDir: string = __dirname): Ingress {
  const { config, cache } = stack;
  const common = { TENANG_STAGE: config.stage.name };
  const payment = stack.workerQueue('payment.capture').queue;
  // The construct id 'Ingress' on the stack keeps the logical ids it had inside PipelineStack.
  const ingress = new Ingress(stack, 'Ingress', {
    ingressEntry: functionEntry(appDir, 'ingress'),
    readerEntry: functionEntry(appDir, 'order-reader'),
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

/**
 * Builds the reference app in `app`: buildApp with the reference's declaration, then its ingress.
 * Its modules' paths are relative to `appDir` (default: this file's directory).
 */
export function referenceApp(
  app: App,
  region: string,
  opts: { readonly appDir?: string } = {},
): ReferenceApp {
  const appDir = opts.appDir ?? __dirname;
  const built = buildApp(app, referencePipeline, region, { appDir });
  return { ...built, ingress: addIngress(built.stack, appDir) };
}
