/**
 * Reads what `tenang audit` is pointed at into stack templates (template-audit.ts): a template
 * file (JSON or YAML, SAM or not), a template's text (stdin, e.g. `cdk synth | tenang audit -`),
 * or a cloud assembly directory (`cdk.out`): manifest.json's stacks, those of nested assemblies
 * (stages), and each nested stack whose TemplateURL is an asset of the assembly. An input no
 * reader accepts is described by unsupported-input.ts: what it looks like and what to run instead.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SERVERLESS_VOCABULARY, isServerlessConfig, readServerlessConfig } from './serverless';
import type { StackTemplate } from './template-audit';
import {
  isTerraformDirectory,
  isTerraformPlan,
  looksLikeHcl,
  readTerraformPlan,
  readTerraformSource,
  readTerraformText,
} from './terraform';
import { parseAllDocuments } from 'yaml';
import { TemplateFormatError, parseTemplateText } from './template-text';
import { describeUnsupported, describeUnsupportedDirectory } from './unsupported-input';

/** A cloud assembly's stack artifact type (manifest.json). */
const STACK_ARTIFACT = 'aws:cloudformation:stack';
/** A nested cloud assembly (a CDK Stage). */
const NESTED_ASSEMBLY = 'cdk:cloud-assembly';

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What `readTemplateText` calls the text of stdin. */
export const STDIN_NAME = 'stdin';

/**
 * The first document of a text that is no template (a Kubernetes manifest is often several YAML
 * documents, which a template never is), for describeUnsupported; undefined when it is none.
 */
function firstDocument(text: string): unknown {
  try {
    const [first] = parseAllDocuments(text, { version: '1.1' });
    return first === undefined || !('toJS' in first) || first.errors.length > 0 ? undefined : first.toJS();
  } catch {
    return undefined;
  }
}

/**
 * A template from its text; `name` is the file (or `stdin`) it came from. A Serverless Framework
 * service (`service` and `provider`/`functions`, no `Resources`) is read into the template the
 * framework would generate (serverless.ts); `${file(…)}` includes resolve next to the file.
 * Terraform HCL text and a Terraform plan's JSON (`terraform show -json`) are read as Terraform
 * (terraform.ts). A text that is another format the audit does not read (describeUnsupported) is
 * refused saying so.
 */
export function readTemplateText(text: string, name: string): StackTemplate {
  if (looksLikeHcl(text)) return readTerraformText(text, name);
  let parsed: ReturnType<typeof parseTemplateText>;
  try {
    parsed = parseTemplateText(text, name);
  } catch (error) {
    const described =
      error instanceof TemplateFormatError ? describeUnsupported(firstDocument(text), name) : undefined;
    if (described !== undefined) throw new TemplateFormatError(described);
    throw error;
  }
  const { template, lineOf } = parsed;
  if (isTerraformPlan(template)) return readTerraformPlan(template, name);
  const stackName = path.basename(name).replace(/\.(template\.)?(json|ya?ml)$/i, '');
  if (isServerlessConfig(template)) {
    const read = readServerlessConfig(template, name === STDIN_NAME ? undefined : name);
    return {
      name: stackName,
      file: name,
      template: read.template,
      lineOf,
      origins: read.origins,
      unresolved: read.unresolved,
      vocabulary: SERVERLESS_VOCABULARY,
    };
  }
  const hasResources = typeof template === 'object' && template !== null && 'Resources' in template;
  const described = hasResources ? undefined : describeUnsupported(template, name);
  if (described !== undefined) throw new TemplateFormatError(described);
  return { name: stackName, file: name, template, lineOf };
}

/**
 * Reads a template file, every stack of a cloud assembly directory, or a Terraform configuration
 * (a directory holding .tf files, or one .tf file).
 */
export function readTemplateSource(source: string): StackTemplate[] {
  if (fs.statSync(source).isDirectory()) {
    if (!fs.existsSync(path.join(source, 'manifest.json')) && isTerraformDirectory(source))
      return [readTerraformSource(source)];
    return readCloudAssembly(source);
  }
  if (source.endsWith('.tf')) return [readTerraformSource(source)];
  return [readTemplateText(fs.readFileSync(source, 'utf8'), source)];
}

function readJson(file: string): Json {
  try {
    const value: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (isRecord(value)) return value;
  } catch (error) {
    throw new TemplateFormatError(
      `${file} is not JSON: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  throw new TemplateFormatError(`${file} is not a JSON object`);
}

/** The stacks of a cloud assembly (cdk.out), nested assemblies and nested stacks included. */
export function readCloudAssembly(directory: string): StackTemplate[] {
  const manifestFile = path.join(directory, 'manifest.json');
  if (!fs.existsSync(manifestFile))
    throw new TemplateFormatError(
      describeUnsupportedDirectory(directory) ?? `${directory} is not a cloud assembly: no manifest.json`,
    );
  const artifacts = readJson(manifestFile).artifacts;
  const stacks: StackTemplate[] = [];
  for (const [id, artifact] of Object.entries(isRecord(artifacts) ? artifacts : {})) {
    if (!isRecord(artifact) || !isRecord(artifact.properties)) continue;
    const properties = artifact.properties;
    if (artifact.type === NESTED_ASSEMBLY && typeof properties.directoryName === 'string') {
      stacks.push(...readCloudAssembly(path.join(directory, properties.directoryName)));
    } else if (artifact.type === STACK_ARTIFACT && typeof properties.templateFile === 'string') {
      const name = typeof properties.stackName === 'string' ? properties.stackName : id;
      const file = path.join(directory, properties.templateFile);
      const read = readTemplateText(fs.readFileSync(file, 'utf8'), file);
      // The CDK synthesizes a stack with nothing in it (an integ test's assertion stack) without
      // `Resources`: in an assembly that is an empty stack, not an unreadable template.
      const template =
        isRecord(read.template) && read.template.Resources === undefined
          ? { ...read.template, Resources: {} }
          : read.template;
      const stack = { ...read, template, name };
      stacks.push(stack, ...nestedStacks(directory, stack));
    }
  }
  if (stacks.length === 0) throw new TemplateFormatError(`${directory}: the cloud assembly holds no stack`);
  return stacks;
}

/** The asset file a nested stack's template is, by the CDK's asset metadata or the asset manifests. */
function nestedTemplateFile(directory: string, resource: Json): string | undefined {
  const metadata = isRecord(resource.Metadata) ? resource.Metadata : {};
  const byMetadata = metadata['aws:asset:path'];
  if (typeof byMetadata === 'string' && fs.existsSync(path.join(directory, byMetadata)))
    return path.join(directory, byMetadata);
  // Otherwise the URL ends in the asset's hash: find its source in an asset manifest.
  const url =
    JSON.stringify(isRecord(resource.Properties) ? resource.Properties.TemplateURL : undefined) ?? '';
  const hash = /([0-9a-f]{64})\.json/.exec(url)?.[1];
  if (hash === undefined) return undefined;
  for (const entry of fs.readdirSync(directory).filter((f) => f.endsWith('.assets.json'))) {
    const files = readJson(path.join(directory, entry)).files;
    const asset = isRecord(files) ? files[hash] : undefined;
    const source = isRecord(asset) && isRecord(asset.source) ? asset.source.path : undefined;
    if (typeof source === 'string' && fs.existsSync(path.join(directory, source)))
      return path.join(directory, source);
  }
  return undefined;
}

/** The nested stacks of a stack found in the assembly, depth first. */
function nestedStacks(directory: string, parent: StackTemplate): StackTemplate[] {
  const resources =
    isRecord(parent.template) && isRecord(parent.template.Resources) ? parent.template.Resources : {};
  return Object.entries(resources).flatMap(([logicalId, resource]) => {
    if (!isRecord(resource) || resource.Type !== 'AWS::CloudFormation::Stack') return [];
    const file = nestedTemplateFile(directory, resource);
    if (file === undefined) return [];
    const child: StackTemplate = {
      ...readTemplateText(fs.readFileSync(file, 'utf8'), file),
      name: `${parent.name}/${logicalId}`,
      parent: { stack: parent.name, logicalId },
    };
    return [child, ...nestedStacks(directory, child)];
  });
}
