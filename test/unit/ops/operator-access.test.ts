/**
 * The table of what each operator command touches (lib/config/operator-access.ts) stays whole:
 * every command a runbook names has its entry, every entry is a command of the CLI, and a
 * command whose target sits in a VPC goes through a function.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildProgram } from '../../../bin/tenang';
import { CACHE_ADMIN_SERVICE } from '../../../lib/config/metrics';
import { OPERATOR_COMMANDS, operatorAccess } from '../../../lib/config/operator-access';
import { resolveCommand, runbookCommands } from '../../../lib/ops/runbook-commands';

const RUNBOOKS = path.join(__dirname, '..', '..', '..', 'runbooks');

describe('Constant: OPERATOR_COMMANDS', () => {
  const program = buildProgram({ out: () => undefined, err: () => undefined });

  it('when the runbooks are read, every command they name has an entry', () => {
    // Prepare
    const named = new Set(
      fs
        .readdirSync(RUNBOOKS)
        .filter((f) => f.endsWith('.md'))
        .flatMap((f) => runbookCommands(fs.readFileSync(path.join(RUNBOOKS, f), 'utf8')))
        .map((c) => resolveCommand(program, c.argv).path.join(' ')),
    );

    // Act
    const missing = [...named].filter((command) => operatorAccess(command) === undefined);

    // Assess
    expect(named.size).toBeGreaterThan(5);
    expect(missing).toEqual([]);
  });

  it('when an entry is read, it names a command of the CLI', () => {
    // Act
    const unknown = OPERATOR_COMMANDS.filter(
      (c) => resolveCommand(program, c.command.split(' ')).path.join(' ') !== c.command,
    ).map((c) => c.command);

    // Assess
    expect(unknown).toEqual([]);
  });

  it('when the cache commands are read, they reach the cache through the cache-admin function and need only lambda:InvokeFunction', () => {
    // Act
    const cache = ['cache invalidate', 'cache flush'].map(operatorAccess);

    // Assess
    for (const entry of cache) {
      expect(entry?.network).toEqual({ kind: 'via-function', service: CACHE_ADMIN_SERVICE, target: 'cache' });
      expect(entry?.actions).toEqual(['lambda:InvokeFunction']);
    }
  });
});
