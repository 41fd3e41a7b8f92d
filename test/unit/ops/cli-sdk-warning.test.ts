/**
 * The SDK's Node.js version notice (@aws-sdk/core's emitWarningIfUnsupportedVersion: once per
 * process, on the first client, below Node.js 22) is off for the CLI's clients. Each case loads
 * the SDK afresh (jest.isolateModules), since the SDK remembers that it already decided.
 */
import type * as CliContextModule from '../../../lib/ops/cli-context';
import { SDK_NODE_VERSION_WARNING_VARIABLE } from '../../../lib/adapters/aws/clients';

const NOTICE = 'NodeVersionSupportWarning';
const nodeMajor = Number(process.versions.node.split('.')[0]);
const saved = process.env[SDK_NODE_VERSION_WARNING_VARIABLE];

afterEach(() => {
  jest.restoreAllMocks();
  if (saved === undefined) delete process.env[SDK_NODE_VERSION_WARNING_VARIABLE];
  else process.env[SDK_NODE_VERSION_WARNING_VARIABLE] = saved;
});

/** Builds the CLI's clients with a fresh copy of the SDK; returns the warnings emitted meanwhile. */
function warningsWhileBuildingClients(): string[] {
  const emit = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  jest.isolateModules(() => {
    const { contextFromEnv } = jest.requireActual<typeof CliContextModule>('../../../lib/ops/cli-context');
    const ctx = contextFromEnv(
      { stage: 'dev', out: () => undefined, err: () => undefined },
      { AWS_REGION: 'us-east-1' },
    );
    for (const client of Object.values(ctx.clients)) client.destroy();
  });
  return emit.mock.calls.map((c) => String(c[0]));
}

describe('Function: contextFromEnv (the SDK Node.js version notice)', () => {
  it('when the CLI builds its clients, the SDK emits no Node.js version notice and the variable says why', () => {
    // Prepare
    delete process.env[SDK_NODE_VERSION_WARNING_VARIABLE];

    // Act
    const warnings = warningsWhileBuildingClients();

    // Assess
    expect(warnings.filter((w) => w.includes(NOTICE))).toEqual([]);
    expect(process.env[SDK_NODE_VERSION_WARNING_VARIABLE]).toBe('true');
  });

  (nodeMajor < 22 ? it : it.skip)(
    'when the user set the variable to anything but "true", it is left alone and the SDK emits its notice (the check above can fail)',
    () => {
      // Prepare
      process.env[SDK_NODE_VERSION_WARNING_VARIABLE] = 'false';

      // Act
      const warnings = warningsWhileBuildingClients();

      // Assess
      expect(process.env[SDK_NODE_VERSION_WARNING_VARIABLE]).toBe('false');
      expect(warnings.filter((w) => w.includes(NOTICE))).toHaveLength(1);
    },
  );
});
