import { iamReport, iamReportMarkdown, type IamUsageFile } from '../../../lib/local/iam/usage';

const QUEUE = 'arn:aws:sqs:us-east-1:123456789012:jobs';
const DLQ = 'arn:aws:sqs:us-east-1:123456789012:jobs-dlq';

/** A run of one role granted send and receive on two queues, X-Ray on "*" and logs on its group. */
function run(used: IamUsageFile['used'], denied: IamUsageFile['denied'] = []): IamUsageFile {
  return {
    version: 1,
    roles: {
      WorkerRole: {
        name: 'stack-WorkerRole-ABC',
        policies: [
          {
            id: 'WorkerRoleDefaultPolicy',
            document: {
              Statement: [
                {
                  Effect: 'Allow',
                  Action: ['sqs:SendMessage', 'sqs:ReceiveMessage'],
                  Resource: [QUEUE, DLQ],
                },
                { Effect: 'Allow', Action: ['xray:PutTraceSegments'], Resource: '*' },
                { Effect: 'Allow', Action: 'dynamodb:Scan', Resource: '*' },
              ],
            },
          },
        ],
      },
    },
    used,
    denied,
  };
}

const sendToQueue = {
  role: 'WorkerRole',
  action: 'sqs:SendMessage',
  resource: QUEUE,
  allowedBy: [{ policyId: 'WorkerRoleDefaultPolicy', kind: 'identity' as const, index: 0 }],
};

describe('Function: iamReport', () => {
  it('when requests used some grants of a statement, only the others are reported unused', () => {
    const report = iamReport([run([sendToQueue])]);

    expect(report.roles).toEqual([{ role: 'WorkerRole', name: 'stack-WorkerRole-ABC', granted: 6, used: 1 }]);
    expect(report.unused.map((u) => `${u.action} ${u.resource}`)).toEqual([
      `sqs:SendMessage ${DLQ}`,
      `sqs:ReceiveMessage ${QUEUE}`,
      `sqs:ReceiveMessage ${DLQ}`,
      'xray:PutTraceSegments *',
      'dynamodb:Scan *',
    ]);
  });

  it('when several runs used different grants, their union counts', () => {
    const receive = { ...sendToQueue, action: 'sqs:ReceiveMessage', resource: DLQ };
    const report = iamReport([run([sendToQueue]), run([receive])]);

    expect(report.runs).toBe(2);
    expect(report.roles[0]?.used).toBe(2);
  });

  it('when a request was allowed by another statement, it does not count as using this one', () => {
    const byOther = {
      ...sendToQueue,
      allowedBy: [{ policyId: 'QueuePolicy', kind: 'resource' as const, index: 0 }],
    };
    expect(iamReport([run([byOther])]).roles[0]?.used).toBe(0);
  });

  it("when the app gives its own reasons, an unused grant of its own carries the app's reason, looked up before tenang's", () => {
    // Act
    const report = iamReport(
      [run([sendToQueue])],
      [{ action: 'dynamodb:Scan', reason: 'the nightly export scans the table (the app says)' }],
    );

    // Assess
    const scan = report.unused.find((u) => u.action === 'dynamodb:Scan');
    expect(scan?.reason).toBe('the nightly export scans the table (the app says)');
    expect(
      iamReport([run([sendToQueue])]).unused.find((u) => u.action === 'dynamodb:Scan')?.reason,
    ).toBeUndefined();
  });

  it('when an unused grant or a Resource "*" has a written reason it carries it; otherwise the markdown asks to narrow it', () => {
    const report = iamReport([run([])]);
    const xray = report.unused.find((u) => u.action === 'xray:PutTraceSegments');
    const scan = report.unused.find((u) => u.action === 'dynamodb:Scan');

    expect(xray?.reason).toMatch(/X-Ray/);
    expect(scan?.reason).toBeUndefined();
    expect(report.wildcards.map((w) => [w.actions, w.reason === undefined])).toEqual([
      [['xray:PutTraceSegments'], false],
      [['dynamodb:Scan'], true],
    ]);
    const markdown = iamReportMarkdown(report, '2026-12-01');
    expect(markdown).toContain(
      '| WorkerRole | `dynamodb:Scan` | `*` | **no reason written: narrow or drop it** |',
    );
  });

  it('when runs saw denials, each distinct denial is listed once with the number of runs that saw it', () => {
    const denial = { caller: 'stack-WorkerRole-ABC', action: 'sqs:SendMessage', resource: QUEUE };
    const report = iamReport([run([], [denial, denial]), run([], [denial])]);
    expect(report.denied).toEqual([{ ...denial, runs: 2 }]);
  });
});
