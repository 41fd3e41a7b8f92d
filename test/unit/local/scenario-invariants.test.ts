import {
  alarmsNotified,
  checkJobInvariants,
  everyDeclaredJobDone,
  noRequestDenied,
  type JobInvariantFacts,
} from '../../../lib/local/scenario-invariants';

const TOPIC = 'arn:aws:sns:us-east-1:123456789012:tenang-dev-alarms';

/** Facts of a healthy run of any app: nothing dead-lettered, every queue drained, the one alarm notified. */
function healthy(): JobInvariantFacts {
  return {
    dlq: [],
    poison: [],
    leftInQueues: { 'report.generate': 0 },
    alarmNotifications: {
      owed: 1,
      deliveries: [
        {
          alarm: 'tenang-dev-report-consumer-dlq',
          target: TOPIC,
          outcome: 'delivered',
          fanOut: {
            subscribers: [{ endpoint: 'alarms@tenang.localhost', outcome: 'recorded' }],
            pending: [],
          },
        },
      ],
    },
  };
}

describe('Function: noRequestDenied', () => {
  const denial = {
    caller: 'tenang-dev-OutboxRelayConsumerRole',
    action: 'dynamodb:BatchWriteItem',
    resource: 'arn:aws:dynamodb:us-east-1:123456789012:table/tenang-dev-dedup',
  };

  it('when a request was denied twice, it fails naming the role, action and resource once with the count', () => {
    const result = noRequestDenied({ iamDenials: [denial, denial] });

    expect(result.holds).toBe(false);
    expect(result.violations).toEqual([
      `${denial.caller} ${denial.action} ${denial.resource}: denied 2 time(s)`,
    ]);
    expect(result.detail).toBe('2 denied');
  });

  it('when none was denied, it holds', () => {
    expect(noRequestDenied({ iamDenials: [] })).toMatchObject({ holds: true, violations: [] });
  });

  it('when IAM was not enforced, it holds and says it was not judged', () => {
    expect(noRequestDenied({})).toMatchObject({ holds: true, detail: 'IAM not enforced (TENANG_IAM=off)' });
  });

  it('is among the invariants every app is judged on', () => {
    const names = checkJobInvariants({ ...healthy(), iamDenials: [denial] })
      .filter((i) => !i.holds)
      .map((i) => i.name);

    expect(names).toEqual(['no request denied by the deployed IAM policies']);
  });
});

describe('Function: alarmsNotified', () => {
  it('when a notification was refused (the topic policy lets no alarm publish), it fails naming the alarm and the error', () => {
    const facts: JobInvariantFacts = {
      ...healthy(),
      alarmNotifications: {
        owed: 1,
        deliveries: [
          {
            alarm: 'tenang-dev-payment-consumer-dlq',
            target: TOPIC,
            outcome: 'failed',
            error:
              'AuthorizationErrorException: User: cloudwatch.amazonaws.com is not authorized to perform: sns:Publish',
          },
        ],
      },
    };
    const result = alarmsNotified(facts);
    expect(result.holds).toBe(false);
    expect(result.violations[0]).toContain('tenang-dev-payment-consumer-dlq');
    expect(result.violations[0]).toContain('sns:Publish');
  });

  it.each([
    [
      'the only subscription is pending confirmation',
      { subscribers: [], pending: ['email alarms@tenang.localhost'] },
      'email alarms@tenang.localhost pending confirmation',
    ],
    ['the topic has no subscriber', { subscribers: [], pending: [] }, 'the topic has no subscriber'],
    [
      'the only subscriber refused it',
      { subscribers: [{ endpoint: 'http://127.0.0.1:9/hook', outcome: 'failed' }], pending: [] },
      'http://127.0.0.1:9/hook failed',
    ],
    ['who it reached is unknown', undefined, 'who it reached is unknown'],
  ])(
    'when a notification was published but %s, it fails: it reached the topic and no person',
    (_case, fanOut, says) => {
      // Prepare
      const facts: JobInvariantFacts = {
        ...healthy(),
        alarmNotifications: {
          owed: 1,
          deliveries: [
            {
              alarm: 'tenang-dev-payment-consumer-dlq',
              target: TOPIC,
              outcome: 'delivered',
              ...(fanOut === undefined ? {} : { fanOut }),
            },
          ],
        },
      };

      // Act
      const result = alarmsNotified(facts);

      // Assess
      expect(result.holds).toBe(false);
      expect(result.violations).toEqual([
        `tenang-dev-payment-consumer-dlq → ${TOPIC}: published, but no confirmed subscriber received it (${says})`,
      ]);
    },
  );

  it('when transitions owed actions but nothing was published, it fails; when every one was delivered, it holds', () => {
    expect(alarmsNotified({ ...healthy(), alarmNotifications: { owed: 2, deliveries: [] } }).holds).toBe(
      false,
    );
    expect(alarmsNotified(healthy()).holds).toBe(true);
    expect(alarmsNotified({ ...healthy(), alarmNotifications: { owed: 0, deliveries: [] } }).holds).toBe(
      true,
    );
  });
});

describe('Module: scenario-invariants', () => {
  describe('Function: everyDeclaredJobDone', () => {
    const job = { jobType: 'invoice.issue', idempotencyKey: 'r1:invoice.issue:1', correlationId: 'c1' };

    it('when every judged job has its completed record, it holds and counts what it judged', () => {
      // Act
      const result = everyDeclaredJobDone({
        ...healthy(),
        declaredJobs: [
          { ...job, done: true, evidence: 'COMPLETED' },
          { ...job, idempotencyKey: 'r1:invoice.issue:2', done: undefined, evidence: undefined },
        ],
      });

      // Assess
      expect(result.holds).toBe(true);
      expect(result.detail).toBe('1 of 2 jobs judged (invoice.issue)');
    });

    it('when a job never completed, it fails and names the job', () => {
      // Act
      const result = everyDeclaredJobDone({
        ...healthy(),
        declaredJobs: [{ ...job, done: false, evidence: undefined }],
      });

      // Assess
      expect(result.holds).toBe(false);
      expect(result.violations).toEqual([
        'invoice.issue r1:invoice.issue:1: no completed idempotency record',
      ]);
    });

    it('when the app declares no job types of its own, it holds and says so', () => {
      expect(everyDeclaredJobDone(healthy())).toMatchObject({
        holds: true,
        detail: 'no job type of the app got jobs from its samplePayload',
      });
    });
  });
});
