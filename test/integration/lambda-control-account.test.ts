/**
 * The local Lambda control plane's GetAccountSettings against moto (which does not implement it):
 * the account's quota from an option, less the reserved concurrency moto holds. The suite works
 * in an account of its own (moto's `x-moto-account-id` header), so no other suite's functions
 * count and every figure can be asserted exactly.
 */
import { randomInt } from 'node:crypto';
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import {
  DeleteFunctionConcurrencyCommand,
  GetAccountSettingsCommand,
  GetFunctionCommand,
  LambdaClient,
  PutFunctionConcurrencyCommand,
} from '@aws-sdk/client-lambda';
import {
  DEFAULT_ACCOUNT_CONCURRENCY,
  startLambdaControl,
  type LambdaControl,
} from '../../lib/local/lambda-control';
import { uniqueName } from '../helpers/aws';
import { createMotoFunction, type MotoFunction } from '../helpers/moto-lambda';

jest.setTimeout(30_000);

/** A 12-digit account no other suite uses. */
const ACCOUNT = String(randomInt(100_000_000_000, 999_999_999_999));
const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

/** Makes every request of `client` act in ACCOUNT (moto reads the header before the access key). */
function inAccount<C extends LambdaClient | CloudFormationClient>(client: C): C {
  client.middlewareStack.add(
    (next) => (args) => {
      (args.request as { headers: Record<string, string> }).headers['x-moto-account-id'] = ACCOUNT;
      return next(args);
    },
    { step: 'build', name: 'motoAccount' },
  );
  return client;
}

describe('Function: startLambdaControl GetAccountSettings (moto)', () => {
  const endpoint = process.env.AWS_ENDPOINT_URL ?? '';
  const region = process.env.AWS_REGION ?? 'us-east-1';
  const controls: LambdaControl[] = [];
  const clients: { destroy(): void }[] = [];
  let moto: LambdaClient;
  let cfn: CloudFormationClient;
  let fn: MotoFunction | undefined;
  let codeSize = 0;

  /** A control plane with `accountConcurrency` in front of moto, and a client in ACCOUNT for it. */
  async function viaControl(accountConcurrency?: number): Promise<LambdaClient> {
    const control = await startLambdaControl({ upstream: endpoint, accountConcurrency });
    controls.push(control);
    const client = inAccount(new LambdaClient({ endpoint: control.url, region, maxAttempts: 1 }));
    clients.push(client);
    return client;
  }

  beforeAll(async () => {
    moto = inAccount(new LambdaClient({ endpoint, region }));
    cfn = inAccount(new CloudFormationClient({ endpoint, region }));
    fn = await createMotoFunction(cfn, moto, uniqueName('acct-fn'), uniqueName('acct-role'));
    const { Configuration } = await moto.send(new GetFunctionCommand({ FunctionName: fn.functionName }));
    codeSize = Configuration?.CodeSize ?? 0;
  });

  afterEach(async () => {
    if (fn !== undefined)
      await moto.send(new DeleteFunctionConcurrencyCommand({ FunctionName: fn.functionName }));
  });

  afterAll(async () => {
    await fn?.delete();
    for (const c of controls) await c.close();
    for (const c of [...clients, moto, cfn]) c?.destroy();
  });

  it("when no quota is given, it answers AWS's default: 1,000 concurrent executions, all unreserved, and the account's functions", async () => {
    // Prepare
    const client = await viaControl();

    // Act
    const settings = await client.send(new GetAccountSettingsCommand({}));

    // Assess
    expect(codeSize).toBeGreaterThan(0);
    expect(settings.AccountLimit).toEqual({
      TotalCodeSize: 75 * GIB,
      CodeSizeUnzipped: 250 * MIB,
      CodeSizeZipped: 50 * MIB,
      ConcurrentExecutions: DEFAULT_ACCOUNT_CONCURRENCY,
      UnreservedConcurrentExecutions: 1000,
    });
    expect(settings.AccountUsage).toEqual({ TotalCodeSize: codeSize, FunctionCount: 1 });
  });

  it('when a function reserves concurrency, the unreserved pool is the quota minus it, read at each request', async () => {
    // Prepare
    const client = await viaControl();
    const before = await client.send(new GetAccountSettingsCommand({}));
    await moto.send(
      new PutFunctionConcurrencyCommand({ FunctionName: fn?.functionName, ReservedConcurrentExecutions: 7 }),
    );

    // Act
    const after = await client.send(new GetAccountSettingsCommand({}));

    // Assess
    expect(before.AccountLimit?.UnreservedConcurrentExecutions).toBe(1000);
    expect(after.AccountLimit).toMatchObject({
      ConcurrentExecutions: 1000,
      UnreservedConcurrentExecutions: 993,
    });
  });

  it("when the quota is an option (a new account's 10), it is ConcurrentExecutions; reservations above it leave 0 unreserved", async () => {
    // Prepare
    const small = await viaControl(10);
    const smaller = await viaControl(5);
    await moto.send(
      new PutFunctionConcurrencyCommand({ FunctionName: fn?.functionName, ReservedConcurrentExecutions: 7 }),
    );

    // Act
    const ten = await small.send(new GetAccountSettingsCommand({}));
    const five = await smaller.send(new GetAccountSettingsCommand({}));

    // Assess
    expect(ten.AccountLimit).toMatchObject({ ConcurrentExecutions: 10, UnreservedConcurrentExecutions: 3 });
    // AccountLimit: UnreservedConcurrentExecutions has a minimum value of 0.
    expect(five.AccountLimit).toMatchObject({ ConcurrentExecutions: 5, UnreservedConcurrentExecutions: 0 });
  });

  it('when the quota is not a whole number of at least 1, the control plane refuses to start', async () => {
    await expect(startLambdaControl({ upstream: endpoint, accountConcurrency: 0 })).rejects.toThrow(
      'accountConcurrency must be a whole number of at least 1, got 0',
    );
    await expect(startLambdaControl({ upstream: endpoint, accountConcurrency: 2.5 })).rejects.toThrow(
      /got 2\.5/,
    );
  });
});
