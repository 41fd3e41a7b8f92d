import * as config from '../../../lib/api/config';
import { onFirstUse } from '../../../lib/config';
import { stageInput } from './builders';

describe('Function: onFirstUse', () => {
  it('when called again, it returns what the first call built, building it once', () => {
    // Prepare
    const build = jest.fn(() => ({ built: true }));
    const get = onFirstUse(build);

    // Act
    const first = get();
    const second = get();

    // Assess
    expect(second).toBe(first);
    expect(build).toHaveBeenCalledTimes(1);
  });

  it('when never called, it builds nothing', () => {
    // Prepare
    const build = jest.fn(() => 1);

    // Act
    onFirstUse(build);

    // Assess
    expect(build).not.toHaveBeenCalled();
  });
});

describe('tenang/config: the schemas under their former names', () => {
  it.each([
    ['StageSchema', config.StageSchema, config.stageSchema],
    ['JobTypeSchema', config.JobTypeSchema, config.jobTypeSchema],
    ['StreamConsumerSchema', config.StreamConsumerSchema, config.streamConsumerSchema],
    ['TableSchema', config.TableSchema, config.tableSchema],
    ['StreamResourcesSchema', config.StreamResourcesSchema, config.streamResourcesSchema],
    ['CachedEntitySchema', config.CachedEntitySchema, config.cachedEntitySchema],
    ['Criticality', config.Criticality, config.criticalitySchema],
    ['QueueKind', config.QueueKind, config.queueKindSchema],
  ] as const)('when an app imports %s, it is the schema its builder returns', (_name, former, builder) => {
    // Act
    const built: unknown = builder();

    // Assess
    expect(former).toBe(built);
  });

  it("when an app validates a stage with the former StageSchema, it reads the stage's name", () => {
    // Act
    const parsed = config.StageSchema.safeParse(stageInput({ name: 'dev' }));

    // Assess
    expect(parsed.success && parsed.data.name).toBe('dev');
  });
});
