/**
 * The CLI loads aws-cdk-lib and cdk-nag only for the commands that synthesize (`tenang audit`):
 * `tenang status --help` is run as `npm run tenang` runs it, with scripts/cli-load.ts's hook
 * listing the modules it loaded. A count of modules, not a timing: bench/CLI.md has the figures.
 */
import { measureCliLoad } from '../../scripts/cli-load';

describe('CLI: modules loaded', () => {
  it('when run with status --help, it loads neither aws-cdk-lib nor cdk-nag, nor the status implementation', async () => {
    // Act
    const run = await measureCliLoad(['status', '--help']);

    // Assess
    expect(run.exitCode).toBe(0);
    // The hook saw the CLI itself: an empty list would pass the assertions below for nothing.
    expect(run.projectFiles).toEqual(expect.arrayContaining([expect.stringMatching(/^bin[/\\]tenang\.ts$/)]));
    expect({ awsCdkLib: run.awsCdkLib, cdkNag: run.cdkNag }).toEqual({ awsCdkLib: 0, cdkNag: 0 });
    // Each command's work loads when it runs, not to print help.
    expect(run.projectFiles).not.toEqual(
      expect.arrayContaining([
        expect.stringMatching(/pipeline-status\.ts$|ops[/\\]audit\.ts$|drills[/\\]run-locally\.ts$/),
      ]),
    );
  }, 60_000);
});
