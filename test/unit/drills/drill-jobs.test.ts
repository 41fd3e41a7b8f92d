import { loadPipelineConfig, type PipelineConfig, type PipelineInput } from '../../../lib/config';
import type { DrillContext } from '../../../lib/drills/drill';
import { drillJobType } from '../../../lib/drills/drill-jobs';
import type { AppExtensions } from '../../../lib/local/extensions';
import { drillInfo } from '../../../lib/ops/drills/catalog';
import { referencePipeline } from '../../../examples/reference/pipeline';

const reference = referencePipeline('unit', 'eu-west-1');
const invoice: PipelineInput['jobTypes'][number] = {
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
};
const stage = {
  ...reference.stage,
  providers: { ...reference.stage.providers, invoicing: 'https://inv.test' },
};
/** The reference plus invoice.issue. */
const withInvoices = loadPipelineConfig({ ...reference, stage, jobTypes: [...reference.jobTypes, invoice] });
/** An app of its own: invoice.issue only, none of the reference's job types. */
const ownApp = loadPipelineConfig({ ...reference, stage, jobTypes: [invoice], streamConsumers: [] });
/** An app whose only job type has no samplePayload. */
const noSample = loadPipelineConfig({
  ...reference,
  stage,
  jobTypes: [{ ...invoice, samplePayload: undefined }],
  streamConsumers: [],
});

const ctx = (config: PipelineConfig, jobType?: string, extensions: AppExtensions = {}): DrillContext =>
  ({ config, jobType, extensions }) as unknown as DrillContext;
const dlq = drillInfo('dlq-not-empty');
/** The reference's default for the drill, and its own jobs for payment.capture. */
const referenceExtensions: AppExtensions = {
  drillJobTypes: { 'dlq-not-empty': 'payment.capture' },
  drillJobs: { 'payment.capture': () => ({}) as never },
};

describe('Module: drill-jobs drillJobType', () => {
  it("when the app's extensions name the drill's job type and no --job-type is given, the drill plays on it", () => {
    expect(drillJobType(ctx(withInvoices, undefined, referenceExtensions), dlq).name).toBe('payment.capture');
  });

  it('when --job-type names a declared job type with a samplePayload, the drill plays on it', () => {
    expect(drillJobType(ctx(withInvoices, 'invoice.issue', referenceExtensions), dlq).name).toBe(
      'invoice.issue',
    );
  });

  it("when the app names no default, the drill plays on the app's first job type with a samplePayload", () => {
    expect(drillJobType(ctx(ownApp), dlq).name).toBe('invoice.issue');
    expect(drillJobType(ctx(withInvoices), dlq).name).toBe('invoice.issue');
  });

  it('when the app has no job type with a samplePayload, the drill says what it needs', () => {
    expect(() => drillJobType(ctx(noSample), dlq)).toThrow(
      'drill dlq-not-empty needs a job type with a samplePayload',
    );
  });

  it('when --job-type names a job type the drill cannot make jobs for, the error lists the ones it can', () => {
    expect(() => drillJobType(ctx(ownApp, 'nope.nope'), dlq)).toThrow('invoice.issue');
    // notification.send is declared, but has neither a samplePayload nor the app's own jobs.
    expect(() => drillJobType(ctx(withInvoices, 'notification.send', referenceExtensions), dlq)).toThrow(
      "--job-type notification.send: drill dlq-not-empty plays on a job type the pipeline declares with a samplePayload (its jobs are made from it) or whose jobs the app's extensions make (drillJobs): payment.capture, invoice.issue",
    );
  });
});
