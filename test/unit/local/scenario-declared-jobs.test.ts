import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { loadPipelineConfig } from '../../../lib/config';
import { declaredJobTypes, sendDeclaredJobs } from '../../../lib/local/scenario-declared-jobs';
import { referencePipeline } from '../../../examples/reference/pipeline';

const reference = referencePipeline('unit', 'eu-west-1');
const withInvoices = loadPipelineConfig({
  ...reference,
  stage: { ...reference.stage, providers: { ...reference.stage.providers, invoicing: 'https://inv.test' } },
  jobTypes: [
    ...reference.jobTypes,
    {
      ...reference.jobTypes[1]!,
      name: 'invoice.issue',
      consumer: 'invoice-consumer',
      usefulAgeSeconds: undefined,
      criticality: 'critical',
      entry: 'jobs/invoice-issue.ts',
      resources: {
        tables: { idempotency: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'] },
        providers: ['invoicing'],
      },
      runbook: 'invoice-issue',
      samplePayload: { invoiceId: 'inv-1', amountMinor: 100 },
    },
  ],
});

describe('Module: scenario-declared-jobs', () => {
  it('when the app declares a job type beyond the order flow with a sample payload, only it gets traffic', () => {
    expect(declaredJobTypes(withInvoices.jobTypes).map((j) => j.name)).toEqual(['invoice.issue']);
    expect(declaredJobTypes(loadPipelineConfig(reference).jobTypes)).toEqual([]);
  });

  it('when jobs are sent, each carries its own idempotency key and the sample payload', async () => {
    // Prepare
    const sqs = mockClient(SQSClient);
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm' });
    const [invoice] = declaredJobTypes(withInvoices.jobTypes);

    // Act
    const sent = await sendDeclaredJobs(
      new SQSClient({ region: 'eu-west-1' }),
      [{ jobType: invoice!, queueUrl: 'https://sqs.test/q' }],
      'r1',
      2,
      () => new Date('2026-12-01T00:00:00Z'),
    );

    // Assess
    expect(sent.map((j) => j.idempotencyKey)).toEqual(['r1:invoice.issue:1', 'r1:invoice.issue:2']);
    const bodies = sqs
      .commandCalls(SendMessageCommand)
      .map((c) => JSON.parse(c.args[0].input.MessageBody ?? '{}'));
    expect(bodies.map((b: { payload: unknown }) => b.payload)).toEqual([
      { invoiceId: 'inv-1', amountMinor: 100 },
      { invoiceId: 'inv-1', amountMinor: 100 },
    ]);
    expect(sqs.commandCalls(SendMessageCommand)[0]?.args[0].input.MessageGroupId).toBeUndefined();
  });
});
