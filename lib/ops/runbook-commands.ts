/**
 * The `tenang` commands a runbook names (P2: every step is a command): extracted from its
 * ```sh blocks, checked against the CLI's own command tree, and matched with the steps a drill
 * ran, so a runbook cannot name a command that does not exist nor a drill run a step the
 * runbook does not say.
 */
import type { Command } from 'commander';

/** One command line of a runbook, without the leading `tenang`. */
export interface RunbookCommand {
  /** 1-based line in the file. */
  readonly line: number;
  readonly argv: readonly string[];
}

/** Splits a shell-like line into words: double and single quotes group, nothing else is special. */
export function shellWords(text: string): string[] {
  const words: string[] = [];
  const pattern = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) words.push(m[1] ?? m[2] ?? m[3] ?? '');
  return words;
}

/** Every `tenang …` line inside the file's fenced ```sh blocks. */
export function runbookCommands(markdown: string): RunbookCommand[] {
  const commands: RunbookCommand[] = [];
  // Inside a fence or not, and whether that fence is shell: a closing fence ends any block
  // (a ```text block must not flip the parity for the blocks after it).
  let inFence = false;
  let inShell = false;
  markdown.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line.startsWith('```')) {
      inShell = !inFence && /^```(sh|bash|shell)?$/.test(line);
      inFence = !inFence;
      return;
    }
    if (!inShell) return;
    const text = line.replace(/^\$\s+/, '');
    if (!text.startsWith('tenang ') && text !== 'tenang') return;
    commands.push({ line: i + 1, argv: shellWords(text).slice(1) });
  });
  return commands;
}

/** The command an argv names (walking subcommands) and its option names (`--x`). */
export function resolveCommand(
  program: Command,
  argv: readonly string[],
): { readonly path: readonly string[]; readonly command: Command; readonly options: readonly string[] } {
  let command = program;
  const path: string[] = [];
  let i = 0;
  for (; i < argv.length; i += 1) {
    const word = argv[i] ?? '';
    if (word.startsWith('-')) break;
    const sub = command.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (sub === undefined) break;
    command = sub;
    path.push(word);
  }
  const options = argv.filter((w) => w.startsWith('--')).map((w) => w.split('=')[0] ?? w);
  return { path, command, options };
}

/** What is wrong with a runbook command: unknown command or option; empty when it is valid. */
export function commandProblems(program: Command, argv: readonly string[]): string[] {
  const { path, command, options } = resolveCommand(program, argv);
  if (path.length === 0) return [`\`tenang ${argv.join(' ')}\`: no such command`];
  if (command.commands.length > 0) return [`\`tenang ${path.join(' ')}\` needs a subcommand`];
  const known = new Set(['--help', ...[command, program].flatMap((c) => c.options.map((o) => o.long ?? ''))]);
  return options.filter((o) => !known.has(o)).map((o) => `\`tenang ${path.join(' ')}\` has no option ${o}`);
}

/** Options that change output or confirmation only; a runbook need not spell them for a step to match. */
const PRESENTATION_OPTIONS = new Set(['--json', '--yes']);

/**
 * Whether a step a drill ran is written in the runbook: a command with the same path whose
 * options include the step's (presentation options aside).
 */
export function stepInRunbook(
  program: Command,
  step: readonly string[],
  commands: readonly RunbookCommand[],
): boolean {
  const ran = resolveCommand(program, step);
  const needed = ran.options.filter((o) => !PRESENTATION_OPTIONS.has(o));
  return commands.some((c) => {
    const written = resolveCommand(program, c.argv);
    return written.path.join(' ') === ran.path.join(' ') && needed.every((o) => written.options.includes(o));
  });
}
