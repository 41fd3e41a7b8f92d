import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LocalEnvError } from '../../../lib/local/errors';
import { findMotoPython } from '../../../lib/local/python';

describe('Function: findMotoPython', () => {
  let projectRoot: string;

  beforeEach(async () => {
    projectRoot = await mkdtemp(path.join(tmpdir(), 'tenang-python-'));
  });

  afterEach(async () => {
    await rm(projectRoot, { recursive: true, force: true });
  });

  /** A python command that fails its first `failures` runs (as a version manager's shim can), then runs python3. */
  async function flakyPython(failures: number): Promise<{ command: string; runs: () => Promise<number> }> {
    const counter = path.join(projectRoot, 'runs');
    await writeFile(counter, '');
    const command = path.join(projectRoot, 'flaky-python');
    await writeFile(
      command,
      [
        '#!/bin/sh',
        `echo run >> '${counter}'`,
        `if [ "$(wc -l < '${counter}')" -le ${failures} ]; then`,
        "  echo 'pyenv: cannot change working directory' >&2",
        '  exit 1',
        'fi',
        'exec python3 "$@"',
        '',
      ].join('\n'),
    );
    await chmod(command, 0o755);
    const runs = async (): Promise<number> =>
      (await readFile(counter, 'utf8')).split('\n').filter(Boolean).length;
    return { command, runs };
  }

  describe('when the check fails once and then succeeds', () => {
    it('asks again and returns the interpreter, without installing anything', async () => {
      // Prepare
      const python = await flakyPython(1);

      // Act
      const found = await findMotoPython({
        python: python.command,
        projectRoot,
        installMoto: false,
        log: () => {},
      });

      // Assess
      expect(path.isAbsolute(found)).toBe(true);
      expect(await python.runs()).toBe(2);
    });
  });

  describe('when the check fails every time', () => {
    it('throws a LocalEnvError carrying what the check printed, after two checks', async () => {
      // Prepare
      const python = await flakyPython(Number.MAX_SAFE_INTEGER);

      // Act
      const finding = findMotoPython({
        python: python.command,
        projectRoot,
        installMoto: false,
        log: () => {},
      });

      // Assess
      await expect(finding).rejects.toThrow(LocalEnvError);
      await expect(finding).rejects.toThrow('pyenv: cannot change working directory');
      expect(await python.runs()).toBe(2);
    });
  });
});
