/** Builders and readers shared by the infra tests: fresh stacks, the reference config, the full stack. */
import * as path from 'node:path';
import { App, Stack, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { IConstruct } from 'constructs';
import { loadPipelineConfig, type PipelineConfig, type PipelineInput } from '../../lib/config';
import { referencePipeline } from '../../examples/reference/pipeline';
import { addIngress } from '../../examples/reference/reference-app';
import type { Ingress } from '../../examples/reference/domain/ingress';
import { withAlarmEmail } from '../../lib/infra/app';
import { PipelineStack } from '../../lib/infra/pipeline-stack';
import { ConstructPropsError } from '../../lib/infra/validation';
import { TARGET_CONTEXT_KEY, targetTraits, type DeployTarget } from '../../lib/infra/target';

/** Region of every full stack built here (the construct stacks stay region-agnostic). */
export const REGION = 'eu-west-1';

/**
 * Skips esbuild for every stack: these tests read templates, not bundles, and bundling the eight
 * functions takes seconds per stack. app.test.ts synthesizes with real bundling.
 */
const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] as string[] };

/** A CloudFormation resource as Template.findResources returns it. */
export interface CfnResource {
  readonly Type: string;
  readonly Properties: Record<string, unknown>;
}

/** The reference app's directory: its job types' `entry` paths are relative to it. */
export const REFERENCE_APP_DIR = path.join(__dirname, '..', '..', 'examples', 'reference');

/** The e-mail the reference is deployed with here, as `-c tenang:alarmEmail=…` would give it. */
export const ON_CALL_EMAIL = 'on-call@example.com';

/** The reference declaration of a stage with its alarm subscriber, as a deployment gives it. */
export function referenceDeclaration(stage = 'dev'): PipelineInput {
  return withAlarmEmail(referencePipeline(stage, REGION), ON_CALL_EMAIL);
}

/** The reference pipeline of a stage, validated and resolved like the app does. */
export function referenceConfig(stage = 'dev'): PipelineConfig {
  return loadPipelineConfig(referenceDeclaration(stage));
}

/** A fresh, empty stack named "Test" in its own app, for construct tests. */
export function testStack(): Stack {
  return new Stack(new App({ context: NO_BUNDLING }), 'Test');
}

/** The reference app's full stack (its pipeline and its ingress) of the dev stage for a target, read from CDK context like buildApp does. */
export function synthPipeline(
  target: DeployTarget = 'aws',
  pipeline: PipelineInput = referenceDeclaration('dev'),
): {
  stack: PipelineStack;
  ingress: Ingress;
  template: Template;
  config: PipelineConfig;
} {
  const app = new App({ context: { ...NO_BUNDLING, [TARGET_CONTEXT_KEY]: target } });
  const stack = new PipelineStack(app, 'tenang-dev', {
    pipeline,
    appDir: REFERENCE_APP_DIR,
    traits: targetTraits(app),
    env: { region: REGION },
  });
  const ingress = addIngress(stack, REFERENCE_APP_DIR);
  return { stack, ingress, template: Template.fromStack(stack), config: stack.config };
}

/** The logical id CloudFormation sees for a construct (an L2's default child, or an L1 itself). */
export function logicalId(construct: IConstruct): string {
  const element = (construct.node.defaultChild ?? construct) as CfnElement;
  return Stack.of(construct).getLogicalId(element);
}

/** The CloudFormation Properties of a construct's resource in a template. */
export function propertiesOf(template: Template, construct: IConstruct): Record<string, unknown> {
  return propertiesById(template, logicalId(construct));
}

/** The CloudFormation Properties of the resource with a logical id. */
export function propertiesById(template: Template, id: string): Record<string, unknown> {
  const resource = (template.toJSON() as { Resources: Record<string, CfnResource | undefined> }).Resources[
    id
  ];
  if (resource === undefined) throw new Error(`no resource ${id} in the template`);
  return resource.Properties;
}

/** `{ "Fn::GetAtt": [id, attribute] }` of a construct. */
export function getAtt(construct: IConstruct, attribute: string): { 'Fn::GetAtt': [string, string] } {
  return { 'Fn::GetAtt': [logicalId(construct), attribute] };
}

/** `{ Ref: id }` of a construct. */
export function ref(construct: IConstruct): { Ref: string } {
  return { Ref: logicalId(construct) };
}

/** Resources of a type, optionally filtered by a props pattern, as a list of [logicalId, resource]. */
export function resources(template: Template, type: string, props?: object): [string, CfnResource][] {
  return Object.entries(template.findResources(type, props) as Record<string, CfnResource>);
}

/** The type of every resource in a template, one entry per resource. */
export function resourceTypes(template: Template): string[] {
  return Object.values((template.toJSON() as { Resources: Record<string, CfnResource> }).Resources).map(
    (r) => r.Type,
  );
}

/** The one resource of a type matching a props pattern; fails naming the count otherwise. */
export function onlyResource(template: Template, type: string, props: object): [string, CfnResource] {
  const found = resources(template, type, props);
  if (found.length !== 1) throw new Error(`expected one ${type} matching, found ${found.length}`);
  return found[0] as [string, CfnResource];
}

/**
 * Renders a CloudFormation value as text, intrinsics as placeholders: `{Ref: X}` → `${X}`,
 * `{Fn::GetAtt: [X, Y]}` → `${X.Y}`, `Fn::Join` joined. Other objects are JSON.
 */
export function toText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'object' && value !== null) {
    const v = value as Record<string, unknown>;
    if (typeof v.Ref === 'string') return `\${${v.Ref}}`;
    const getAtt = v['Fn::GetAtt'];
    if (Array.isArray(getAtt)) return `\${${getAtt.map(String).join('.')}}`;
    const join = v['Fn::Join'];
    if (Array.isArray(join) && typeof join[0] === 'string' && Array.isArray(join[1])) {
      return (join[1] as unknown[]).map(toText).join(join[0]);
    }
  }
  return JSON.stringify(value);
}

/** The IAM policy statements attached to a role (all its AWS::IAM::Policy resources). */
export function statementsOfRole(template: Template, roleLogicalId: string): Record<string, unknown>[] {
  return resources(template, 'AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleLogicalId }] } }).flatMap(
    ([, policy]) => (policy.Properties.PolicyDocument as { Statement: Record<string, unknown>[] }).Statement,
  );
}

/** The logical id of a function's execution role. */
export function roleIdOf(fn: lambda.IFunction): string {
  if (fn.role === undefined) throw new Error(`${fn.node.path} has no role`);
  return logicalId(fn.role);
}

/** The actions a function's role is allowed on a resource, given as CloudFormation renders it. */
export function actionsAllowedOn(template: Template, fn: lambda.IFunction, resource: unknown): string[] {
  const wanted = JSON.stringify(resource);
  return statementsOfRole(template, roleIdOf(fn))
    .filter((s) => s.Effect === 'Allow' && resourcesOf(s).some((r) => JSON.stringify(r) === wanted))
    .flatMap(actionsOf);
}

/** A statement's actions as a list, whether CloudFormation holds one string or several. */
export function actionsOf(statement: Record<string, unknown>): string[] {
  const action = statement.Action;
  return Array.isArray(action) ? action.map(String) : [String(action)];
}

/** A statement's resources as a list. */
export function resourcesOf(statement: Record<string, unknown>): unknown[] {
  const resource = statement.Resource;
  return Array.isArray(resource) ? resource : [resource];
}

/** Runs `act`, expecting a ConstructPropsError, and returns it so a test can read its problems. */
export function propsErrorOf(act: () => unknown): ConstructPropsError {
  try {
    act();
  } catch (error) {
    if (error instanceof ConstructPropsError) return error;
    throw error;
  }
  throw new Error('expected a ConstructPropsError, but nothing was thrown');
}
