import type { PipelineConfig } from '../../../lib/config';
import { auditFailed } from '../../../lib/audit/checklist';
import * as path from 'node:path';
import { appDrillInfos } from '../../../lib/drills/app-drills';
import { DRILL_CATALOG } from '../../../lib/ops/drills/catalog';
import { auditPipelineConfig, type ConfigAuditOptions } from '../../../lib/audit/config-audit';
import { referenceConfig } from '../helpers';

/** The reference app's drills (tenang's and its extensions'), as the CLI hands them to the audit. */
const REFERENCE_DRILLS = appDrillInfos(path.join(__dirname, '..', '..', '..'));
const DRILLS: ConfigAuditOptions = { drills: REFERENCE_DRILLS };

/** The status of each config rule, by rule id. */
function statuses(config: PipelineConfig, options = DRILLS): Record<string, string> {
  return Object.fromEntries(auditPipelineConfig(config, options).map((i) => [i.ruleId, i.status]));
}

describe('Function: auditPipelineConfig', () => {
  it('when given the reference pipeline, no error-level rule fails', () => {
    // Act
    const items = auditPipelineConfig(referenceConfig(), DRILLS);

    // Assess
    expect(auditFailed(items)).toBe(false);
    expect(statuses(referenceConfig())).toMatchObject({
      'Tenang-P3-Owner': 'pass',
      'Tenang-P1-Runbook': 'pass',
      'Tenang-D1': 'pass',
      'Tenang-B5-UsefulAge': 'pass',
    });
  });

  it('when a sheddable job type declares no useful age, the B5 rule warns naming it, and the audit still passes', () => {
    // Prepare
    const reference = referenceConfig();
    const config: PipelineConfig = {
      ...reference,
      jobTypes: reference.jobTypes.map((j) =>
        j.criticality === 'sheddable' ? { ...j, usefulAgeSeconds: undefined } : j,
      ),
    };
    const at = reference.jobTypes.findIndex((j) => j.criticality === 'sheddable');

    // Act
    const items = auditPipelineConfig(config, DRILLS);

    // Assess
    const rule = items.find((i) => i.ruleId === 'Tenang-B5-UsefulAge');
    expect(rule).toMatchObject({
      status: 'fail',
      level: 'warning',
      featureId: 'B5',
      resources: [`jobTypes[${at}].usefulAgeSeconds`],
    });
    expect(rule?.why).toContain('no useful age');
    expect(auditFailed(items)).toBe(false);
  });

  it('when a job type has a blank owner, the owner rule fails naming its config path', () => {
    // Prepare
    const reference = referenceConfig();
    const [first, ...rest] = reference.jobTypes;
    if (first === undefined) throw new Error('the reference pipeline has no job type');
    const config: PipelineConfig = { ...reference, jobTypes: [{ ...first, owner: '  ' }, ...rest] };

    // Act
    const items = auditPipelineConfig(config, DRILLS);

    // Assess
    const owner = items.find((i) => i.ruleId === 'Tenang-P3-Owner');
    expect(owner).toMatchObject({ status: 'fail', featureId: 'P3', resources: ['jobTypes[0].owner'] });
    expect(auditFailed(items)).toBe(true);
  });

  it('when a consumer names a runbook file that does not exist, the runbook rule fails', () => {
    // Prepare
    const reference = referenceConfig();
    const [first, ...rest] = reference.streamConsumers;
    if (first === undefined) throw new Error('the reference pipeline has no stream consumer');
    const config: PipelineConfig = {
      ...reference,
      streamConsumers: [{ ...first, runbook: 'no-such-runbook' }, ...rest],
    };

    // Act
    const items = auditPipelineConfig(config, DRILLS);

    // Assess
    const runbook = items.find((i) => i.ruleId === 'Tenang-P1-Runbook');
    expect(runbook).toMatchObject({
      status: 'fail',
      featureId: 'P1',
      resources: ['streamConsumers[0].runbook'],
    });
    expect(runbook?.why).toContain('runbooks/no-such-runbook.md does not exist');
    expect(auditFailed(items)).toBe(true);
  });

  it('when a critical job type is not idempotent, the D1 rule fails', () => {
    // Prepare
    const reference = referenceConfig();
    const config: PipelineConfig = {
      ...reference,
      jobTypes: reference.jobTypes.map((j) =>
        j.criticality === 'critical' ? { ...j, idempotent: false } : j,
      ),
    };

    // Act
    const result = statuses(config);

    // Assess
    expect(result['Tenang-D1']).toBe('fail');
  });

  it('when every runbook has a drill (its own, or one exercising its consumer), the drill rule passes; a runbook without one fails it', () => {
    // Prepare
    const withoutRetryStorm = REFERENCE_DRILLS.filter((d) => d.runbook !== 'retry-storm');

    // Act
    const drilled = auditPipelineConfig(referenceConfig(), DRILLS);
    const undrilled = auditPipelineConfig(referenceConfig(), { drills: withoutRetryStorm });

    // Assess
    expect(drilled.find((i) => i.ruleId === 'Tenang-P2-Drill')).toMatchObject({
      status: 'pass',
      level: 'error',
    });
    const failing = undrilled.find((i) => i.ruleId === 'Tenang-P2-Drill');
    expect(failing).toMatchObject({ status: 'fail', level: 'error' });
    expect(failing?.why).toContain('runbooks/retry-storm.md has no drill');
    expect(auditFailed(undrilled)).toBe(true);
  });

  it('when a pipeline has no stream consumer, no alarm names stream-failures, so P2 needs no drill of it; with one, it does', () => {
    // Prepare: the reference without its stream consumers, and with them, with tenang's drills only
    // (stream-failures is the reference's own drill).
    const reference = referenceConfig();
    const withoutStreams: PipelineConfig = { ...reference, streamConsumers: [] };
    const kitDrills = REFERENCE_DRILLS.filter((d) => d.runbook !== 'stream-failures');

    // Act
    const without = auditPipelineConfig(withoutStreams, { drills: kitDrills });
    const withStreams = auditPipelineConfig(reference, { drills: kitDrills });

    // Assess
    const p2 = (items: typeof without) => items.find((i) => i.ruleId === 'Tenang-P2-Drill');
    expect(p2(without)?.why ?? '').not.toContain('stream-failures');
    expect(p2(withStreams)).toMatchObject({ status: 'fail' });
    expect(p2(withStreams)?.why).toContain('runbooks/stream-failures.md has no drill');
  });

  it("when the reference's extensions are left out, P2 fails for the consumers only its own drills and defaults exercise", () => {
    // Act
    const kitOnly = auditPipelineConfig(referenceConfig(), { drills: DRILL_CATALOG });

    // Assess: tenang's drills name none of the reference's consumers, and it declares no samplePayload.
    const failing = kitOnly.find((i) => i.ruleId === 'Tenang-P2-Drill');
    expect(failing).toMatchObject({ status: 'fail' });
    expect(failing?.why).toContain('runbooks/stale-cache.md has no drill');
  });
});
