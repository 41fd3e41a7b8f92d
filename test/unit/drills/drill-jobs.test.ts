import { loadPipelineConfig, type PipelineConfig, type PipelineInput } from '../../../lib/config';
import type { DrillContext } from '../../../lib/drills/drill';
import { declaredDrillJobType } from '../../../lib/drills/drill-jobs';
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

const ctx = (config: PipelineConfig, jobType?: string): DrillContext =>
  ({ config, jobType }) as unknown as DrillContext;
const dlq = drillInfo('dlq-not-empty');

describe('Module: drill-jobs declaredDrillJobType', () => {
  it("when the app declares the drill's own job type and no --job-type is given, the drill keeps its own incident", () => {
    expect(declaredDrillJobType(ctx(withInvoices), dlq)).toBeUndefined();
  });

  it('when --job-type names a declared job type with a samplePayload, the drill plays on it', () => {
    expect(declaredDrillJobType(ctx(withInvoices, 'invoice.issue'), dlq)?.name).toBe('invoice.issue');
  });

  it("when the app does not declare the drill's own job type, the drill plays on the app's first job type with a samplePayload", () => {
    expect(declaredDrillJobType(ctx(ownApp), dlq)?.name).toBe('invoice.issue');
  });

  it('when the app has no job type with a samplePayload, the drill says what it needs', () => {
    expect(() => declaredDrillJobType(ctx(noSample), dlq)).toThrow(
      'drill dlq-not-empty needs a job type with a samplePayload',
    );
  });

  it('when --job-type names a job type that is not declared, the error lists the ones that are', () => {
    expect(() => declaredDrillJobType(ctx(ownApp, 'nope.nope'), dlq)).toThrow('invoice.issue');
  });
});
