/**
 * What an input `tenang audit` cannot read looks like, and what to run instead: the message when
 * no reader (template-input.ts) accepts a file or directory. A Kubernetes manifest, a Compose
 * file or a package.json is a common wrong argument; saying what it is and where the audit's
 * input comes from is worth more than "no Resources object".
 *
 * The hook for new readers: a format that gains a reader is accepted before this is asked, so
 * its entry here (if any) is simply never reached; a format without one gets its line here.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What the audit reads, for the end of every message. */
const WHAT_IT_READS =
  'tenang audit reads AWS CloudFormation: a template (JSON or YAML, SAM included), a cdk.out directory, or - for stdin';

/** One format the audit does not read: how to recognize its document, and what to say. */
interface UnsupportedFormat {
  /** e.g. `a Kubernetes manifest`. */
  readonly name: (doc: Json) => string;
  readonly matches: (doc: Json) => boolean;
  /** What to run instead. */
  readonly instead: string;
}

const FORMATS: readonly UnsupportedFormat[] = [
  {
    name: (doc) =>
      `an Azure Resource Manager template${typeof doc.$schema === 'string' ? ` (${doc.$schema})` : ''}`,
    matches: (doc) => typeof doc.$schema === 'string' && /deploymentTemplate/i.test(doc.$schema),
    instead:
      'it deploys to Azure, where the queue and its consumers are not CloudFormation resources: audit the AWS stack that runs the work',
  },
  {
    name: () => 'a Terraform state file',
    matches: (doc) => typeof doc.terraform_version === 'string' && ('resources' in doc || 'modules' in doc),
    instead:
      'a state file records what was applied, not the configuration the rules judge: point the audit at the configuration it was applied from',
  },
  {
    name: (doc) => `a Kubernetes manifest (kind ${String(doc.kind)})`,
    matches: (doc) => typeof doc.apiVersion === 'string' && typeof doc.kind === 'string',
    instead:
      'Kubernetes workloads are not CloudFormation resources: audit the CloudFormation template (or cdk.out) that creates the queues and their consumers',
  },
  {
    name: () => 'a GitHub Actions workflow',
    // YAML 1.1 (how CloudFormation's tools read YAML) makes the key `on` the boolean true.
    matches: (doc) => isRecord(doc.jobs) && ('on' in doc || 'true' in doc),
    instead:
      'to audit in CI, add a step that runs `npx tenang audit <template or cdk.out> --format sarif` and uploads the SARIF file',
  },
  {
    name: () => 'a Docker Compose file',
    matches: (doc) =>
      isRecord(doc.services) &&
      Object.values(doc.services).some((s) => isRecord(s) && ('image' in s || 'build' in s)),
    instead:
      'containers run by Compose are not CloudFormation resources: audit the template (or cdk.out) that deploys the queues and their consumers',
  },
  {
    name: () => 'a Node.js package manifest (package.json)',
    matches: (doc) =>
      typeof doc.name === 'string' &&
      ('dependencies' in doc || 'devDependencies' in doc || 'scripts' in doc || 'version' in doc),
    instead:
      "in a CDK app's directory run `tenang audit` with no argument (it synthesizes the app), or `npx cdk synth` and then `tenang audit cdk.out`",
  },
  {
    name: (doc) => `an OpenAPI document${typeof doc.openapi === 'string' ? ` (${doc.openapi})` : ''}`,
    matches: (doc) => 'openapi' in doc || 'swagger' in doc,
    instead:
      'an API description holds no queue or consumer: audit the template (or cdk.out) that deploys the API and its workers',
  },
  {
    name: () => 'a Pulumi project or program (Pulumi YAML)',
    matches: (doc) =>
      (typeof doc.name === 'string' && (typeof doc.runtime === 'string' || isRecord(doc.runtime))) ||
      (isRecord(doc.resources) &&
        Object.values(doc.resources).some(
          (r) =>
            isRecord(r) && typeof r.type === 'string' && /^[a-z0-9-]+:[A-Za-z0-9/]*:[A-Za-z]/.test(r.type),
        )),
    instead:
      'Pulumi deploys without CloudFormation, so there is no template for these rules to read: audit the CloudFormation template (or cdk.out) of the stacks that run the queues and their consumers, if any',
  },
];

/**
 * Why a parsed document is not an input the audit reads, with what it looks like and what to run
 * instead; undefined when it looks like none of the formats known (the caller's own message stands).
 * `source` is the file's name, for the message.
 */
export function describeUnsupported(doc: unknown, source = 'the input'): string | undefined {
  if (!isRecord(doc)) return undefined;
  const format = FORMATS.find((f) => f.matches(doc));
  if (format === undefined) return undefined;
  return `${source} looks like ${format.name(doc)}, not a CloudFormation template: ${format.instead} (${WHAT_IT_READS})`;
}

/**
 * Why a directory is not a cloud assembly, when it looks like something the audit can be pointed
 * at another way: a CDK app (cdk.json) whose assembly is not synthesized, or is in its cdk.out.
 */
export function describeUnsupportedDirectory(directory: string): string | undefined {
  if (!fs.existsSync(path.join(directory, 'cdk.json'))) return undefined;
  const assembly = path.join(directory, 'cdk.out');
  if (fs.existsSync(path.join(assembly, 'manifest.json')))
    return `${directory} is a CDK app, not a cloud assembly: audit its assembly with \`tenang audit ${assembly}\`, or run \`tenang audit\` with no argument in ${directory} (it synthesizes the app)`;
  return `${directory} is a CDK app without a synthesized assembly (no cdk.out): run \`npx cdk synth\` there and then \`tenang audit ${assembly}\`, or run \`tenang audit\` with no argument in ${directory} (it synthesizes the app)`;
}
