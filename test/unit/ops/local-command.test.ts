/**
 * `tenang local up|start`: the command parses its options and hands the run to the runner bin/
 * gives it (lib/ops never loads the emulator); a run that fails is exit 1; outside an app the run
 * stops before starting anything, with a message and no trace.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Command } from 'commander';
import { runCaptured } from '../../../bin/tenang';
import { runLocalForCli, type LocalRunIo } from '../../../lib/local/local-commands';
import { CommandFailedError, type CliContext } from '../../../lib/ops/cli-context';
import { localCommand, type LocalRunRequest } from '../../../lib/ops/commands/local';

/** A program with the global --stage and only the local command, running through `runner`. */
function program(runner: (request: LocalRunRequest) => Promise<number>): Command {
  const p = new Command('tenang').option('--stage <name>', 'stage', 'dev').exitOverride();
  p.configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
  localCommand(runner)(p, () => ({}) as CliContext);
  for (const sub of p.commands) sub.exitOverride().commands.forEach((c) => c.exitOverride());
  return p;
}

describe('Command: tenang local', () => {
  it('when `local up --quiet` runs, the runner gets an up of the global stage', async () => {
    // Prepare
    const requests: LocalRunRequest[] = [];

    // Act
    await program((r) => (requests.push(r), Promise.resolve(0))).parseAsync(
      ['--stage', 'qa', 'local', 'up', '--quiet'],
      { from: 'user' },
    );

    // Assess
    expect(requests).toEqual([{ run: 'up', stage: 'qa', quiet: true }]);
  });

  it('when `local start` gets a scenario, duration and rate, the runner gets them as numbers', async () => {
    // Prepare
    const requests: LocalRunRequest[] = [];

    // Act
    await program((r) => (requests.push(r), Promise.resolve(0))).parseAsync(
      ['local', 'start', '--scenario', 'smoke', '--duration', '30', '--rate', '2/s'],
      { from: 'user' },
    );

    // Assess
    expect(requests).toEqual([{ run: 'start', stage: 'dev', scenario: 'smoke', duration: 30, rate: 2 }]);
  });

  it('when the scenario fails an invariant (exit 1), the command fails', async () => {
    // Act & Assess
    await expect(
      program(() => Promise.resolve(1)).parseAsync(['local', 'start'], { from: 'user' }),
    ).rejects.toThrow(new CommandFailedError('scenario default failed (exit code 1)'));
  });

  it('when --duration is not a number, it is a usage error and nothing runs', async () => {
    // Prepare
    const runner = jest.fn(() => Promise.resolve(0));

    // Act & Assess
    await expect(
      program(runner).parseAsync(['local', 'start', '--duration', 'soon'], { from: 'user' }),
    ).rejects.toThrow(/--duration/);
    expect(runner).not.toHaveBeenCalled();
  });

  it("when the CLI's help is shown, it lists local with up and start", async () => {
    // Act
    const { code, out } = await runCaptured(['local', '--help']);

    // Assess
    expect(code).toBe(0);
    expect(out).toContain('up ');
    expect(out).toContain('start ');
  });

  it('when run outside any app (no cdk.json above), it fails with the reason and starts nothing', async () => {
    // Prepare
    const elsewhere = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-no-app-')));
    const io: LocalRunIo = {
      out: jest.fn(),
      log: jest.fn(),
      err: jest.fn(),
      onSignal: jest.fn(),
      exit: () => {
        throw new Error('exit called');
      },
    };

    try {
      // Act & Assess
      await expect(runLocalForCli({ run: 'up', stage: 'dev' }, io, elsewhere)).rejects.toThrow(
        CommandFailedError,
      );
      await expect(runLocalForCli({ run: 'up', stage: 'dev' }, io, elsewhere)).rejects.toThrow(
        /no cdk\.json in .*tenang-no-app-.* or above/,
      );
      expect(io.onSignal).not.toHaveBeenCalled();
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});
