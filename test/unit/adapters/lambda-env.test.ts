import { FunctionEnvError, parseFunctionEnv, stageConfig } from '../../../lib/adapters/lambda-env';
import { decodePipeline, encodePipeline, pipelineBundleDefines } from '../../../lib/config';
import * as z from '../../../lib/config/zod';
import { referencePipeline } from '../../../examples/reference/pipeline';

/** A function's environment as a consumer would declare it. */
const ConsumerEnv = z.object({
  TENANG_STAGE: z.string().check(z.regex(/^[a-z][a-z0-9-]*$/, 'must be a lowercase stage name')),
  QUEUE_URL: z.url(),
  DLQ_URL: z.url(),
  TABLE_NAME: z.string().check(z.minLength(1)),
});

const VALID = {
  TENANG_STAGE: 'test',
  QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-test-notification-send',
  DLQ_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-test-notification-send-dlq',
  TABLE_NAME: 'tenang-test-orders',
};

/** Runs `action` and returns the FunctionEnvError it throws; fails the test otherwise. */
function envErrorOf(action: () => unknown): FunctionEnvError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(FunctionEnvError);
    return error as FunctionEnvError;
  }
  throw new Error('expected a FunctionEnvError, but nothing was thrown');
}

const savedEnv = { ...process.env };

afterEach(() => {
  process.env = { ...savedEnv };
});

describe('Function: parseFunctionEnv', () => {
  it('when every variable is valid, it returns them typed, without unrelated variables', () => {
    // Act
    const env = parseFunctionEnv('notification-consumer', ConsumerEnv, { ...VALID, PATH: '/usr/bin' });

    // Assess
    expect(env).toEqual(VALID);
  });

  it('when every variable is missing, it lists each as not set in one error', () => {
    // Act
    const error = envErrorOf(() => parseFunctionEnv('notification-consumer', ConsumerEnv, {}));

    // Assess
    expect(error.problems).toEqual([
      'TENANG_STAGE: is not set',
      'QUEUE_URL: is not set',
      'DLQ_URL: is not set',
      'TABLE_NAME: is not set',
    ]);
    expect(error.name).toBe('FunctionEnvError');
    expect(error.message).toBe(
      'Invalid environment of notification-consumer:\n' +
        '  - TENANG_STAGE: is not set\n' +
        '  - QUEUE_URL: is not set\n' +
        '  - DLQ_URL: is not set\n' +
        '  - TABLE_NAME: is not set',
    );
  });

  it('when some variables are missing and others invalid, it lists every one of them, each by name', () => {
    // Prepare
    const env = { TENANG_STAGE: 'Prod!', QUEUE_URL: 'not a url', TABLE_NAME: '' };

    // Act
    const error = envErrorOf(() => parseFunctionEnv('notification-consumer', ConsumerEnv, env));

    // Assess
    expect(error.problems).toHaveLength(4);
    expect(error.problems).toEqual(
      expect.arrayContaining([
        'TENANG_STAGE: must be a lowercase stage name',
        expect.stringMatching(/^QUEUE_URL: (?!is not set)/),
        'DLQ_URL: is not set',
        expect.stringMatching(/^TABLE_NAME: (?!is not set)/),
      ]),
    );
  });

  it('when no environment is passed, it reads process.env', () => {
    // Prepare
    Object.assign(process.env, VALID);

    // Act
    const env = parseFunctionEnv('notification-consumer', ConsumerEnv);

    // Assess
    expect(env.QUEUE_URL).toBe(VALID.QUEUE_URL);
  });

  it('when process.env lacks a variable, the error names it', () => {
    // Prepare
    Object.assign(process.env, VALID);
    delete process.env.DLQ_URL;

    // Act
    const error = envErrorOf(() => parseFunctionEnv('notification-consumer', ConsumerEnv));

    // Assess
    expect(error.problems).toEqual(['DLQ_URL: is not set']);
  });
});

describe('Function: stageConfig', () => {
  it('when given a stage and a region, it loads the reference pipeline for them', () => {
    // Act
    const config = stageConfig('test', 'eu-west-1');

    // Assess
    expect(config.stage).toMatchObject({ name: 'test', region: 'eu-west-1' });
    expect(config.jobTypes.map((j) => j.queueName)).toEqual([
      'tenang-test-payment-capture.fifo',
      'tenang-test-notification-send',
      'tenang-test-inventory-reserve',
    ]);
  });

  it('when the region is not set, it defaults to us-east-1', () => {
    // Act
    const config = stageConfig('test', undefined);

    // Assess
    expect(config.stage.region).toBe('us-east-1');
  });

  it('when the stage name is invalid, it fails with the pipeline config error', () => {
    // Act
    const act = (): unknown => stageConfig('Prod!', 'eu-west-1');

    // Assess
    expect(act).toThrow(/stage\.name/);
  });

  describe('when the bundle carries the config the synth loaded (pipelineBundleDefines)', () => {
    const encoded = encodePipeline(referencePipeline('dev', 'us-east-1'));
    /** What esbuild writes for process.env.TENANG_PIPELINE_RESOLVED: a JS string literal. */
    const resolvedLiteral = pipelineBundleDefines(encoded)['process.env.TENANG_PIPELINE_RESOLVED'] ?? '';

    afterEach(() => {
      delete process.env.TENANG_PIPELINE_RESOLVED;
    });

    it('when the defines are made, they carry the declaration and the config loaded from it, equal to what a cold start would load', () => {
      // Act
      const defines = pipelineBundleDefines(encoded);

      // Assess: the JSON round trip loses nothing a function reads.
      expect(JSON.parse(defines['process.env.TENANG_PIPELINE'] ?? '""')).toBe(encoded);
      expect(JSON.parse(JSON.parse(resolvedLiteral) as string)).toEqual(decodePipeline(encoded, 'test'));
    });

    /**
     * stageConfig as a bundled function calls it: the compiled-in config set, and a declaration
     * that no longer loads, which shows it is not read.
     */
    function bundledStageConfig(stage: string, region: string): unknown {
      process.env.TENANG_PIPELINE_RESOLVED = JSON.parse(resolvedLiteral) as string;
      const declaration = process.env.TENANG_PIPELINE;
      process.env.TENANG_PIPELINE = '{ not json';
      try {
        return stageConfig(stage, region);
      } finally {
        process.env.TENANG_PIPELINE = declaration;
      }
    }

    it("when its stage and region are the function's, it is used as it is: the declaration is not read", () => {
      // Act
      const config = bundledStageConfig('dev', 'us-east-1');

      // Assess
      expect(config).toEqual(decodePipeline(encoded, 'test'));
    });

    it('when the function runs in another stage or region, it is that config with the names derived again, as loading the declaration there gives', () => {
      // Act
      const config = bundledStageConfig('prod', 'eu-west-1');

      // Assess
      expect(config).toEqual(decodePipeline(encoded, 'test', 'prod', 'eu-west-1'));
    });

    it('when the function runs under a stage name that is not valid, it fails with the pipeline config error', () => {
      // Act
      const act = (): unknown => bundledStageConfig('Prod!', 'eu-west-1');

      // Assess
      expect(act).toThrow(/stage\.name/);
    });

    it('when the declaration is not valid, the defines fail at synth, not at a cold start', () => {
      // Act
      const declaration = referencePipeline('dev', 'us-east-1');
      const act = (): unknown =>
        pipelineBundleDefines(
          encodePipeline({ ...declaration, stage: { ...declaration.stage, name: 'Prod!' } }),
        );

      // Assess
      expect(act).toThrow(/stage\.name/);
    });
  });
});
