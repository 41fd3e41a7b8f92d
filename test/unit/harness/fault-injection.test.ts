import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  addSdkFaults,
  FAULT_TRACE_PREFIX,
  parseSdkFaults,
  type SdkFaults,
} from '../../../harness/faults/fault-injection';
import { classifyError, permissionDenial } from '../../../lib/core/errors';

type Stack = DynamoDBClient['middlewareStack'];
type Handler = (args: { input: object }) => Promise<{ output: object }>;

/**
 * The middleware addSdkFaults adds, over a `next` that applies the request (counted); returns a
 * sender, what was applied and the trace lines written.
 */
function faultySender(
  faults: SdkFaults,
  random: () => number = () => 1,
  answer: () => Promise<{ output: object }> = () => Promise.resolve({ output: {} }),
) {
  let middleware: ((next: Handler, context: object) => Handler) | undefined;
  const stack = { add: (m: typeof middleware) => void (middleware = m) } as unknown as Stack;
  const lines: string[] = [];
  addSdkFaults(stack, faults, random, (line) => lines.push(line));
  let applied = 0;
  const next: Handler = () => {
    applied += 1;
    return answer();
  };
  const errors: Error[] = [];
  const send = async (input: object = {}, commandName = 'PutItemCommand'): Promise<string> => {
    if (middleware === undefined) throw new Error('no middleware was added');
    try {
      await middleware(next, { commandName })({ input });
      return 'ok';
    } catch (error) {
      errors.push(error as Error);
      return (error as Error).name;
    }
  };
  return { send, applied: () => applied, lines, errors };
}

const NONE: SdkFaults = {
  throttleRate: 0,
  timeoutRate: 0,
  lostResponseRate: 0,
  timeoutMs: 1,
  traceLocks: false,
};

describe('Function: parseSdkFaults', () => {
  it('when the spec names no fault, it answers undefined (the middleware is never added)', () => {
    expect(parseSdkFaults(undefined)).toBeUndefined();
    expect(parseSdkFaults('timeout-ms=50')).toBeUndefined();
  });

  it('when the spec names rates and forced requests, it reads them; a bad index is ignored and a rate is clamped', () => {
    const faults = parseSdkFaults(
      'ddb-throttle=2,ddb-timeout=0.1,ddb-lost-response-at=3,ddb-timeout-at=0,ddb-throttle-at=x,timeout-ms=50',
    );

    expect(faults).toEqual({
      throttleRate: 1,
      timeoutRate: 0.1,
      lostResponseRate: 0,
      throttleAt: undefined,
      timeoutAt: undefined,
      lostResponseAt: 3,
      timeoutMs: 50,
      traceLocks: false,
    });
  });

  it('when access denial is named, it reads its rate; absent, the field is left out', () => {
    expect(parseSdkFaults('ddb-access-denied=1')).toMatchObject({ accessDeniedRate: 1 });
    expect(parseSdkFaults('ddb-access-denied=0')).toBeUndefined();
    expect(parseSdkFaults('ddb-throttle=0.5')).not.toHaveProperty('accessDeniedRate');
  });

  it('when only a forced request is named, the faults are active', () => {
    expect(parseSdkFaults('ddb-timeout-at=2')).toMatchObject({ timeoutAt: 2, timeoutRate: 0 });
  });
});

describe('Function: addSdkFaults', () => {
  it('when a lost answer is forced at request 2, only that request is applied and then fails with TimeoutError', async () => {
    // Prepare
    const { send, applied, lines } = faultySender({ ...NONE, lostResponseAt: 2 });

    // Act
    const outcomes = [await send(), await send(), await send()];

    // Assess
    expect(outcomes).toEqual(['ok', 'TimeoutError', 'ok']);
    expect(applied()).toBe(3);
    expect(lines).toEqual([`${FAULT_TRACE_PREFIX}ddb-lost-response PutItemCommand`]);
  });

  it('when a timeout is forced at request 1, that request is never applied', async () => {
    // Prepare
    const { send, applied, lines } = faultySender({ ...NONE, timeoutAt: 1 });

    // Act
    const outcomes = [await send(), await send()];

    // Assess
    expect(outcomes).toEqual(['TimeoutError', 'ok']);
    expect(applied()).toBe(1);
    expect(lines).toEqual([`${FAULT_TRACE_PREFIX}ddb-timeout PutItemCommand`]);
  });

  it('when a throttle is forced at request 3, that request is refused unsent as a retryable throttle', async () => {
    // Prepare
    const { send, applied } = faultySender({ ...NONE, throttleAt: 3 });

    // Act
    const outcomes = [await send(), await send(), await send()];

    // Assess
    expect(outcomes).toEqual(['ok', 'ok', 'ProvisionedThroughputExceededException']);
    expect(applied()).toBe(2);
  });

  it('when access is denied, the request is refused unsent as DynamoDB refuses a missing grant: a deployment error naming the action and table', async () => {
    // Prepare
    const { send, applied, lines, errors } = faultySender({ ...NONE, accessDeniedRate: 1 }, () => 0.5);

    // Act
    const outcome = await send({ TableName: 'tenang-dev-dedup' }, 'UpdateItemCommand');
    const transact = await send(
      { TransactItems: [{ Put: { TableName: 'tenang-dev-idempotency' } }] },
      'TransactWriteItemsCommand',
    );

    // Assess
    expect([outcome, transact]).toEqual(['AccessDeniedException', 'AccessDeniedException']);
    expect(applied()).toBe(0);
    expect(lines).toEqual([
      `${FAULT_TRACE_PREFIX}ddb-access-denied UpdateItemCommand`,
      `${FAULT_TRACE_PREFIX}ddb-access-denied TransactWriteItemsCommand`,
    ]);
    expect(classifyError(errors[0])).toBe('deployment');
    expect(permissionDenial(errors[0])).toMatchObject({
      action: 'dynamodb:UpdateItem',
      resource: expect.stringMatching(/:table\/tenang-dev-dedup$/),
    });
    expect(permissionDenial(errors[1])?.resource).toMatch(/:table\/tenang-dev-idempotency$/);
  });

  it('when access denial is off, it draws nothing for it: the other faults see the draws they saw before', async () => {
    // Prepare
    const draws: number[] = [];
    const { send } = faultySender({ ...NONE, throttleRate: 0.5 }, () => {
      draws.push(1);
      return 0.9;
    });

    // Act
    await send();

    // Assess: one draw each for throttle, timeout and lost response.
    expect(draws).toHaveLength(3);
  });

  it('when the rates draw a fault, it fires whatever the forced index', async () => {
    // Prepare: every draw under the rate.
    const { send, lines } = faultySender({ ...NONE, throttleRate: 0.5 }, () => 0.1);

    // Act
    const outcomes = [await send(), await send()];

    // Assess
    expect(outcomes).toEqual([
      'ProvisionedThroughputExceededException',
      'ProvisionedThroughputExceededException',
    ]);
    expect(lines).toHaveLength(2);
  });

  it('when a lease acquire fails its condition on its own owner (an earlier attempt was applied, its answer lost), it is traced as an accepted acquire; on another owner, as refused', async () => {
    // Prepare: the locks table answers as it does to a resent acquire.
    const refusedOn = (owner: string) => () =>
      Promise.reject(
        Object.assign(new Error('The conditional request failed'), {
          name: 'ConditionalCheckFailedException',
          Item: { owner: { S: owner } },
        }),
      );
    const acquire = {
      UpdateExpression: 'SET #owner = :owner, #acquiredAt = :now',
      Key: { resource: { S: 'inventory:sku-1' } },
      ExpressionAttributeValues: { ':owner': { S: 'token-a' } },
    };
    const traced = async (answer: () => Promise<{ output: object }>) => {
      const { send, lines } = faultySender({ ...NONE, traceLocks: true }, () => 1, answer);
      const outcome = await send(acquire, 'UpdateItemCommand');
      const trace = JSON.parse(lines[0]?.replace(/^[^{]*/, '') ?? '{}') as { ok?: boolean; owner?: string };
      return { outcome, ok: trace.ok, owner: trace.owner };
    };

    // Act
    const resent = await traced(refusedOn('token-a'));
    const taken = await traced(refusedOn('token-b'));

    // Assess: the error still reaches the store, which reads the holder itself.
    expect(resent).toEqual({ outcome: 'ConditionalCheckFailedException', ok: true, owner: 'token-a' });
    expect(taken).toEqual({ outcome: 'ConditionalCheckFailedException', ok: false, owner: 'token-a' });
  });
});
