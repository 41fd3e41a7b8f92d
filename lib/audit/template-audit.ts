/**
 * Runs the template rules over raw CloudFormation templates: one (a file, stdin) or several that
 * deploy together (a cdk.out: stacks, nested stacks, imports between them). SAM templates are
 * modelled first (sam.ts). Several stacks are audited as one template whose logical ids carry their
 * stack, after resolving the references between them: a nested stack's parameters and outputs, and
 * `Fn::ImportValue` against the exports of the stacks given. A reference that stays unresolved
 * makes each rule that reads it `not-checkable` for that resource, naming what is unknown; a rule
 * gives one verdict per resource (a failure is not also not-checkable).
 *
 * A nested stack whose template is not given (an `AWS::CloudFormation::Stack` or SAM application
 * whose TemplateURL is outside the input) may hold anything, but a rule can only be changed by
 * what crosses its boundary: an output the parent reads is an unresolved reference (above), and a
 * resource the parent passes it as a parameter (a queue, a function, a table, an alarm) may be
 * consumed, mapped or watched there. So each rule that reads a resource of that type, and has not
 * already decided on it from the parent, is not-checkable for that resource; a nested stack passed
 * none of the rule's subjects (a stack creating a Cognito user) changes nothing. Its own resources
 * are not audited: TemplateAudit.notAudited names it, once, not per rule.
 */
import { checklistItem, type AuditFinding, type ChecklistItem, type ItemFinding } from './checklist';
import {
  CONFIG_TEMPLATE_RULES,
  TEMPLATE_RULES,
  TemplateIndex,
  ruleId,
  type TemplateAuditOptions,
  type TemplateVocabulary,
  type TemplateModel,
  type TemplateResource,
} from './rules';
import { expandServerless, type ResourceOrigin } from './sam';
import { TemplateFormatError } from './template-text';

export { TemplateFormatError } from './template-text';

/** One stack's template as read, with where it came from. */
export interface StackTemplate {
  /** The stack's name (cdk.out), or the file's. */
  readonly name: string;
  /** The template file (or `stdin`), for reports; none for a template synthesized in memory. */
  readonly file?: string;
  readonly template: unknown;
  /** The line of a path in the file (template-text.ts), when the text was kept. */
  readonly lineOf?: (path: readonly string[]) => number | undefined;
  /** For a nested stack: its parent's name and the `AWS::CloudFormation::Stack` resource in it. */
  readonly parent?: { readonly stack: string; readonly logicalId: string };
  /**
   * For a template read from another format (a serverless.yml): where each resource came from in
   * the file, overriding `Resources.<id>`.
   */
  readonly origins?: ReadonlyMap<string, ResourceOrigin>;
  /** For such a template: by logical id, by property, what its format left unresolved (its variables). */
  readonly unresolved?: ReadonlyMap<string, ReadonlyMap<string, ReadonlySet<string>>>;
  /** The format's words and defaults, when not CloudFormation's. */
  readonly vocabulary?: TemplateVocabulary;
  /**
   * For a template built from several files of another format (Terraform): how findings name a
   * resource (its address) and in which file and line it is written, by logical id; `origins`
   * and `lineOf` otherwise.
   */
  readonly locate?: (
    logicalId: string,
  ) => { readonly display: string; readonly file?: string; readonly line?: number } | undefined;
}

/** What the template rules found: the checklist, and each failing or not-checkable finding located. */
export interface TemplateAudit {
  readonly items: ChecklistItem[];
  readonly findings: AuditFinding[];
  /** Nested stacks whose template was not given: their own resources are not audited (the user's names). */
  readonly notAudited: string[];
}

/** A nested stack whose template was not given, with the merged ids of the resources passed to it. */
interface UnseenStack {
  readonly display: string;
  readonly passed: ReadonlySet<string>;
}

/** The nested-stack resource type. */
const NESTED_STACK = 'AWS::CloudFormation::Stack';

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks the shape a rule relies on: `Resources` whose entries have a string `Type`. */
export function toTemplateModel(template: unknown): TemplateModel {
  if (!isRecord(template) || !isRecord(template.Resources)) {
    throw new TemplateFormatError(
      'not a CloudFormation template: no Resources object (nor a serverless.yml: no service with provider or functions)',
    );
  }
  const bad = Object.entries(template.Resources)
    .filter(([, r]) => !isRecord(r) || typeof r.Type !== 'string')
    .map(([id]) => id);
  if (bad.length > 0) throw new TemplateFormatError(`resources without a Type: ${bad.join(', ')}`);
  return { Resources: template.Resources as Record<string, TemplateResource> };
}

/** One stack while the set is merged. */
interface StackContext {
  readonly stack: StackTemplate;
  /** Put before its logical ids in the merged model (`''` for a single stack). */
  readonly prefix: string;
  readonly resources: Readonly<Record<string, Json>>;
  readonly outputs: Readonly<Record<string, unknown>>;
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly origins: ReadonlyMap<string, ResourceOrigin>;
  parent?: { readonly context: StackContext; readonly logicalId: string };
  readonly children: Map<string, StackContext>;
}

/** Merges stacks into one model, resolving what refers across them. */
class StackMerger {
  private readonly exports = new Map<string, { context: StackContext; value: unknown }>();

  public constructor(private readonly contexts: readonly StackContext[]) {
    for (const context of contexts) {
      for (const output of Object.values(context.outputs)) {
        if (!isRecord(output) || !isRecord(output.Export)) continue;
        const name = exportName(output.Export.Name, context.stack.name);
        if (name !== undefined) this.exports.set(name, { context, value: output.Value });
      }
    }
  }

  /** `value` of stack `context` in the merged model's terms; what cannot be resolved goes to `unknown`. */
  public rewrite(context: StackContext, value: unknown, unknown: Set<string>, depth = 0): unknown {
    if (depth > 32) return value; // a cycle of parameters and outputs; CloudFormation refuses it too
    const again = (c: StackContext, v: unknown): unknown => this.rewrite(c, v, unknown, depth + 1);
    if (Array.isArray(value)) return value.map((v) => again(context, v));
    if (!isRecord(value)) return value;
    if (typeof value.Ref === 'string') return this.ref(context, value.Ref, unknown, again) ?? value;
    const getAtt = getAttParts(value['Fn::GetAtt']);
    if (getAtt !== undefined) return this.getAtt(context, getAtt, unknown, again) ?? value;
    if ('Fn::ImportValue' in value) {
      const name = exportName(again(context, value['Fn::ImportValue']), undefined);
      const exported = name === undefined ? undefined : this.exports.get(name);
      if (exported !== undefined) return again(exported.context, exported.value);
      unknown.add(
        `Fn::ImportValue ${name === undefined ? JSON.stringify(value['Fn::ImportValue']) : `"${name}"`}: no stack given exports it`,
      );
      return value;
    }
    if ('Fn::Sub' in value) return this.sub(context, value['Fn::Sub'], unknown, again);
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, again(context, v)]));
  }

  private ref(
    context: StackContext,
    id: string,
    unknown: Set<string>,
    again: (c: StackContext, v: unknown) => unknown,
  ): unknown {
    if (id in context.resources) return { Ref: `${context.prefix}${id}` };
    const parent = context.parent;
    if (id.startsWith('AWS::')) return undefined;
    const passed = parent?.context.resources[parent.logicalId]?.Properties;
    const parameters = isRecord(passed) && isRecord(passed.Parameters) ? passed.Parameters : {};
    if (parent !== undefined && id in parameters) return again(parent.context, parameters[id]);
    // A parameter nobody passes takes its Default: the merged model keeps it, under the stack's prefix.
    if (id in context.parameters) return { Ref: `${context.prefix}${id}` };
    return undefined;
  }

  private getAtt(
    context: StackContext,
    [id, attribute]: [string, string],
    unknown: Set<string>,
    again: (c: StackContext, v: unknown) => unknown,
  ): unknown {
    const resource = context.resources[id];
    if (resource === undefined) return undefined;
    if (resource.Type === NESTED_STACK && attribute.startsWith('Outputs.')) {
      const child = context.children.get(id);
      const output = child?.outputs[attribute.slice('Outputs.'.length)];
      if (child !== undefined && isRecord(output)) return again(child, output.Value);
      unknown.add(
        `${id}.${attribute}: ${child === undefined ? 'the nested stack was not given' : 'no such output'}`,
      );
      return undefined;
    }
    return { 'Fn::GetAtt': [`${context.prefix}${id}`, attribute] };
  }

  /** Fn::Sub: resource names get the prefix; parameters and outputs become variables. */
  private sub(
    context: StackContext,
    sub: unknown,
    unknown: Set<string>,
    again: (c: StackContext, v: unknown) => unknown,
  ): unknown {
    const [text, given] = typeof sub === 'string' ? [sub, {}] : Array.isArray(sub) ? [sub[0], sub[1]] : [];
    if (typeof text !== 'string') return { 'Fn::Sub': again(context, sub) };
    const variables: Json = Object.fromEntries(
      Object.entries(isRecord(given) ? given : {}).map(([k, v]) => [k, again(context, v)]),
    );
    let added = 0;
    const body = text.replace(/\$\{([^!}][^}]*)\}/g, (whole, name: string) => {
      if (name in variables || name.startsWith('AWS::')) return whole;
      const [id = '', ...rest] = name.split('.');
      const attribute = rest.join('.');
      const resolved =
        attribute === ''
          ? this.ref(context, id, unknown, again)
          : this.getAtt(context, [id, attribute], unknown, again);
      if (resolved === undefined) return whole;
      const target = isRecord(resolved) ? resolved : undefined;
      if (target !== undefined && typeof target.Ref === 'string') return `\${${target.Ref}}`;
      const parts = target !== undefined ? getAttParts(target['Fn::GetAtt']) : undefined;
      if (parts !== undefined) return `\${${parts[0]}.${parts[1]}}`;
      const variable = `TenangResolved${added++}`;
      variables[variable] = resolved;
      return `\${${variable}}`;
    });
    return Object.keys(variables).length === 0 ? { 'Fn::Sub': body } : { 'Fn::Sub': [body, variables] };
  }
}

/** The logical ids a value references: `Ref`, `Fn::GetAtt`, and `${X}` / `${X.Attr}` in `Fn::Sub`. */
function referencedIds(value: unknown, into: Set<string> = new Set(), depth = 0): Set<string> {
  if (depth > 32) return into;
  if (Array.isArray(value)) for (const v of value) referencedIds(v, into, depth + 1);
  if (!isRecord(value)) return into;
  if (typeof value.Ref === 'string') into.add(value.Ref);
  const getAtt = getAttParts(value['Fn::GetAtt']);
  if (getAtt !== undefined) into.add(getAtt[0]);
  const sub = value['Fn::Sub'];
  const text = typeof sub === 'string' ? sub : Array.isArray(sub) ? sub[0] : undefined;
  if (typeof text === 'string')
    for (const [, name = ''] of text.matchAll(/\$\{([^!}][^}.]*)(?:\.[^}]*)?\}/g)) into.add(name);
  for (const [key, v] of Object.entries(value)) if (key !== 'Ref') referencedIds(v, into, depth + 1);
  return into;
}

/** A `Fn::GetAtt` as [logical id, attribute] (the string form splits at the first dot). */
function getAttParts(value: unknown): [string, string] | undefined {
  if (Array.isArray(value) && typeof value[0] === 'string' && typeof value[1] === 'string')
    return [value[0], value[1]];
  if (typeof value === 'string' && value.includes('.')) {
    const dot = value.indexOf('.');
    return [value.slice(0, dot), value.slice(dot + 1)];
  }
  return undefined;
}

/** An export's name when it is literal (or a Sub of the stack's own name). */
function exportName(value: unknown, stackName: string | undefined): string | undefined {
  if (typeof value === 'string') return value;
  const sub = isRecord(value) ? value['Fn::Sub'] : undefined;
  if (typeof sub === 'string' && stackName !== undefined && !/\$\{(?!AWS::StackName\})/.test(sub))
    return sub.replaceAll('${AWS::StackName}', stackName);
  return undefined;
}

/** How the merged model names one of its resources back to the user. */
interface Located {
  readonly display: string;
  readonly stack?: string;
  readonly file?: string;
  readonly line?: number;
}

/**
 * Builds the one model the rules read from several stacks; returns with it where each merged
 * resource came from and the unresolved references of each, by the properties they are under.
 */
function mergeStacks(stacks: readonly StackTemplate[]): {
  model: TemplateModel;
  located: Map<string, Located>;
  unresolved: Map<string, Map<string, Set<string>>>;
  unseen: UnseenStack[];
} {
  const several = stacks.length > 1;
  const contexts = stacks.map((stack, i): StackContext => {
    const model = toTemplateModel(stack.template);
    const expanded = expandServerless({ ...(stack.template as Json), Resources: model.Resources });
    const resources = (expanded.template.Resources ?? {}) as Record<string, Json>;
    const outputs = isRecord(expanded.template.Outputs) ? expanded.template.Outputs : {};
    const parameters = isRecord(expanded.template.Parameters) ? expanded.template.Parameters : {};
    // S<n>Z: letters and digits only (Fn::Sub names must stay word characters), and never ambiguous.
    const prefix = several ? `S${i}Z` : '';
    const origins = new Map([...expanded.origins, ...(stack.origins ?? [])]);
    return { stack, prefix, resources, outputs, parameters, origins, children: new Map() };
  });
  const byName = new Map(contexts.map((c) => [c.stack.name, c]));
  for (const context of contexts) {
    const parent = context.stack.parent;
    const parentContext = parent === undefined ? undefined : byName.get(parent.stack);
    if (parent === undefined || parentContext === undefined) continue;
    context.parent = { context: parentContext, logicalId: parent.logicalId };
    parentContext.children.set(parent.logicalId, context);
  }
  const merger = new StackMerger(contexts);
  const resources: Record<string, TemplateResource> = {};
  const parameters: Record<string, unknown> = {};
  const located = new Map<string, Located>();
  const unresolved = new Map<string, Map<string, Set<string>>>();
  const unseen: UnseenStack[] = [];
  for (const context of contexts) {
    for (const [name, parameter] of Object.entries(context.parameters))
      parameters[`${context.prefix}${name}`] = parameter;
    for (const [id, resource] of Object.entries(context.resources)) {
      const mergedId = `${context.prefix}${id}`;
      const byProperty = new Map<string, Set<string>>();
      const properties = isRecord(resource.Properties) ? resource.Properties : {};
      const rewritten = Object.fromEntries(
        Object.entries(properties).map(([key, value]) => {
          const unknown = new Set<string>();
          const result = merger.rewrite(context, value, unknown);
          if (unknown.size > 0) byProperty.set(key, unknown);
          return [key, result];
        }),
      );
      const other = merger.rewrite(context, { ...resource, Properties: undefined }, new Set()) as Json;
      resources[mergedId] = {
        ...other,
        Type: String(resource.Type),
        Properties: rewritten,
      } as TemplateResource;
      // What the input's own format could not resolve (a serverless.yml's variables) is unknown too.
      for (const [property, what] of context.stack.unresolved?.get(id) ?? [])
        byProperty.set(property, new Set([...(byProperty.get(property) ?? []), ...what]));
      if (byProperty.size > 0) unresolved.set(mergedId, byProperty);
      const origin = context.origins.get(id) ?? { display: id, path: ['Resources', id] };
      const own = context.stack.locate?.(id);
      const display = own?.display ?? origin.display;
      located.set(mergedId, {
        display: several ? `${context.stack.name}/${display}` : display,
        stack: several ? context.stack.name : undefined,
        file: own?.file ?? context.stack.file,
        line: own === undefined ? context.stack.lineOf?.(origin.path) : own.line,
      });
    }
    // A nested stack not given: what the parent passes it is what it may change a verdict of.
    for (const [id, resource] of Object.entries(context.resources)) {
      if (resource.Type !== NESTED_STACK || context.children.has(id)) continue;
      const mergedId = `${context.prefix}${id}`;
      const passed = resources[mergedId]?.Properties?.Parameters;
      unseen.push({
        display: located.get(mergedId)?.display ?? mergedId,
        passed: new Set([...referencedIds(passed)].filter((r) => r !== mergedId && r in resources)),
      });
    }
  }
  return { model: { Resources: resources, Parameters: parameters }, located, unresolved, unseen };
}

/**
 * One verdict per resource: a failure is the verdict (its not-checkable findings dropped), and
 * several failing (or several not-checkable) findings on one resource become one, their reasons
 * joined. Passing findings are kept as they are (a pass's why counts what was checked).
 */
function oneVerdictPerResource<F extends ItemFinding & { logicalId: string }>(findings: readonly F[]): F[] {
  const failed = new Set(findings.filter((f) => !f.compliant).map((f) => f.logicalId));
  const merged = new Map<string, F>();
  const out: F[] = [];
  for (const f of findings) {
    const unknown = f.compliant && f.checkable === false;
    if (f.compliant && !unknown) {
      out.push(f);
      continue;
    }
    if (unknown && failed.has(f.logicalId)) continue;
    const key = `${unknown ? 'unknown' : 'fail'} ${f.logicalId}`;
    const first = merged.get(key);
    if (first === undefined) {
      merged.set(key, f);
      out.push(f);
    } else if (!first.why.split('; ').includes(f.why)) {
      const joined = { ...first, why: `${first.why}; ${f.why}` };
      merged.set(key, joined);
      out[out.indexOf(first)] = joined;
    }
  }
  return out;
}

/** Replaces CloudFormation's words by an input format's (StackTemplate.vocabulary), longest first. */
function translator(vocabularyWords: Readonly<Record<string, string>> | undefined): (text: string) => string {
  const words = Object.entries(vocabularyWords ?? {}).sort(([a], [b]) => b.length - a.length);
  if (words.length === 0) return (text) => text;
  const edge = (c: string | undefined): boolean => c !== undefined && /\w/.test(c);
  const pattern = new RegExp(
    words
      .map(
        ([from]) =>
          `${edge(from[0]) ? '(?<!\\w)' : ''}${from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}${edge(from.at(-1)) ? '(?!\\w)' : ''}`,
      )
      .join('|'),
    'g',
  );
  const to = new Map(words);
  return (text) => text.replace(pattern, (word) => to.get(word) ?? word);
}

/** Replaces merged ids in a text by the names the user knows, longest first. */
function renamer(located: ReadonlyMap<string, Located>): (text: string) => string {
  const renames = [...located].filter(([id, l]) => id !== l.display).sort(([a], [b]) => b.length - a.length);
  if (renames.length === 0) return (text) => text;
  const pattern = new RegExp(`\\b(${renames.map(([id]) => id).join('|')})\\b`, 'g');
  const names = new Map(renames.map(([id, l]) => [id, l.display]));
  return (text) => text.replace(pattern, (id) => names.get(id) ?? id);
}

/**
 * Audits stacks that deploy together (or one template): the checklist and its located findings.
 * `options.objectives` (the pipeline config's latency objectives) turns on the threshold rule.
 */
export function auditTemplates(
  stacks: readonly StackTemplate[],
  options: TemplateAuditOptions = {},
): TemplateAudit {
  const { model, located, unresolved, unseen } = mergeStacks(stacks);
  const vocabulary = options.vocabulary ?? stacks.find((s) => s.vocabulary !== undefined)?.vocabulary;
  const index = new TemplateIndex(model, vocabulary === undefined ? options : { ...options, vocabulary });
  const mappingKinds = new Map(index.mappings.map((m) => [m.logicalId, m.sourceKind]));
  const renameIds = renamer(located);
  const translate = translator(vocabulary?.words);
  const rename = (text: string): string => translate(renameIds(text));
  const findings: AuditFinding[] = [];
  const items = [...TEMPLATE_RULES, ...CONFIG_TEMPLATE_RULES].map((rule) => {
    const id = ruleId(rule);
    const own: (ItemFinding & { logicalId: string })[] = rule.check(index).map((f) => ({
      resource: located.get(f.logicalId)?.display ?? f.logicalId,
      compliant: f.compliant,
      ...(f.checkable === false ? { checkable: false } : {}),
      why: rename(f.why),
      logicalId: f.logicalId,
    }));
    const unknown: (ItemFinding & { logicalId: string })[] = [];
    for (const [logicalId, byProperty] of unresolved) {
      const type = model.Resources[logicalId]?.Type ?? '';
      const kind = mappingKinds.get(logicalId);
      // A mapping the rule does not judge (an SQS event under a stream rule) is nothing to it.
      if (kind !== undefined && kind !== 'unknown' && rule.mappingKinds?.includes(kind) === false) continue;
      const read = rule.reads?.[type] ?? [];
      const what = [...byProperty]
        .filter(([property]) => read.includes(property))
        .flatMap(([, refs]) => [...refs]);
      if (what.length === 0) continue;
      const display = located.get(logicalId)?.display ?? logicalId;
      unknown.push({
        resource: display,
        compliant: true,
        checkable: false,
        why: rename(`${display}: ${what.join('; ')}: not checkable from the input`),
        logicalId,
      });
    }
    const decided = new Set(own.filter((f) => f.checkable !== false).map((f) => f.logicalId));
    for (const stack of unseen) {
      for (const logicalId of stack.passed) {
        const type = model.Resources[logicalId]?.Type ?? '';
        if (rule.reads?.[type] === undefined || decided.has(logicalId)) continue;
        const display = located.get(logicalId)?.display ?? logicalId;
        unknown.push({
          resource: display,
          compliant: true,
          checkable: false,
          why: `${display}: it is passed to nested stack ${stack.display}, whose template was not given, so what that stack does with it is not audited: audit the nested stack's template with this one`,
          logicalId,
        });
      }
    }
    const all = oneVerdictPerResource([...own, ...unknown]);
    const checked = checklistItem({ ruleId: id, featureId: rule.featureId, title: rule.title }, all);
    const item =
      checked.status === 'not-applicable' && rule.notApplicable !== undefined
        ? { ...checked, why: rule.notApplicable(index) }
        : checked;
    for (const f of all) {
      if (f.compliant && f.checkable !== false) continue;
      const where = located.get(f.logicalId);
      findings.push({
        ruleId: id,
        featureId: rule.featureId,
        // A not-checkable finding is a note even inside a failing rule; a failure keeps the rule's level.
        level: f.compliant ? 'note' : (item.ruleLevel ?? item.level),
        status: f.compliant ? 'not-checkable' : 'fail',
        resource: f.resource,
        ...(where?.stack === undefined ? {} : { stack: where.stack }),
        ...(where?.file === undefined ? {} : { file: where.file }),
        ...(where?.line === undefined ? {} : { line: where.line }),
        why: f.why,
      });
    }
    return item;
  });
  // In the input's words (a Terraform module whose source is not a local path is such a stack).
  const notAudited = unseen.map((u) =>
    rename(
      `nested stack ${u.display}: its template was not given (audit the whole cdk.out, or the nested template with this one)`,
    ),
  );
  return { items, findings, notAudited };
}

/** The checklist for one template object (JSON form; SAM is modelled): one item per rule, in checklist order. */
export function auditTemplate(template: unknown, options: TemplateAuditOptions = {}): ChecklistItem[] {
  return auditTemplates([{ name: 'template', template }], options).items;
}
