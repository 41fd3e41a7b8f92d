/**
 * Least privilege shown, not claimed: what each local platform's requests used of the deployed
 * grants (written by the platform when it stops, under reports/iam/), and the report that lists,
 * per role, every granted action and resource that no request used, and every `Resource: "*"`,
 * each with its written reason or flagged as having none (`npm run iam-report`).
 */
import type { IamAuthorizer, UsageRecord } from './authorizer';
import {
  actionPatternMatches,
  resourcePatternMatches,
  type NamedPolicy,
  type PolicyStatement,
} from './evaluate';

/** One platform run's usage file. */
export interface IamUsageFile {
  readonly version: 1;
  readonly roles: Readonly<
    Record<string, { readonly name: string; readonly policies: readonly NamedPolicy[] }>
  >;
  readonly used: readonly UsageRecord[];
  readonly denied: readonly { readonly caller: string; readonly action: string; readonly resource: string }[];
}

/** What a platform writes when it stops. */
export function iamUsageOf(iam: IamAuthorizer): IamUsageFile {
  const roles: Record<string, { name: string; policies: readonly NamedPolicy[] }> = {};
  for (const role of iam.policies.roles.values())
    roles[role.logicalId] = { name: role.name, policies: role.identity };
  return {
    version: 1,
    roles,
    used: iam.usageRecords(),
    denied: iam.denials().map(({ caller, action, resource }) => ({ caller, action, resource })),
  };
}

/**
 * Why a grant that local runs never use is still needed, by action pattern (matched against the
 * granted action, case-insensitively, `*` allowed). Each reason is what an on-call engineer or a
 * reviewer needs to keep or drop the grant.
 */
export const UNUSED_GRANT_REASONS: readonly GrantReason[] = [
  {
    action: 'logs:*',
    reason:
      "AWS services write CloudWatch Logs with the role (Lambda the function's log, VPC Flow Logs the VPC's); locally the host reads stdout and there is no VPC, so no logs request is made.",
  },
  {
    action: 'sqs:ChangeMessageVisibility',
    reason:
      "The job runner sets each retry's backoff, each FIFO deferral and each permission hold with it (part of CDK's consume grant); a run in which no job of this type fails never calls it.",
  },
  {
    action: 'sqs:GetQueueUrl',
    reason:
      "Part of CDK's grantConsumeMessages (SqsEventSource) and of the on-failure destination's send grant; the functions get queue URLs from their environment and never call it.",
  },
  {
    action: 'sqs:GetQueueAttributes',
    resource: '*-failures',
    reason:
      "Part of the grant CDK's SqsDlq (a stream mapping's on-failure destination) writes; the Lambda service only sends there.",
  },
  {
    action: 'dynamodb:ListStreams',
    reason:
      "The Lambda service's DynamoDB stream mapping requires it (CDK's DynamoEventSource grants it on \"*\"); the local poller reads the deployed mapping's stream ARN directly.",
  },
  {
    action: 'ssm:GetParameter',
    resource: '*:parameter/tenang/*/flags/degrade',
    reason:
      'Producers read the degrade flag only for work that is not critical; the reference ingress admits critical payments only, and the grant keeps degrade mode working for the first sheddable job type it takes.',
  },
  {
    action: 'lambda:UpdateEventSourceMapping',
    reason:
      'The reconciler flips whichever mapping an operator pauses or resumes; a test run pauses only some consumers.',
  },
  {
    action: 'xray:*',
    reason:
      'Active tracing: the Lambda service sends trace segments with the role; X-Ray is not emulated locally.',
  },
  {
    action: 'ec2:*',
    reason:
      "AWSLambdaVPCAccessExecutionRole: the Lambda service creates the VPC function's network interfaces with the role; the local platform has no VPC.",
  },
  {
    action: 'elasticache:Connect',
    reason: 'IAM authentication to Valkey; the local platform runs a plain Redis, which IAM cannot guard.',
  },
];

/** Resource "*" grants and why AWS leaves no narrower choice. */
export const WILDCARD_RESOURCE_REASONS: readonly GrantReason[] = [
  {
    action: 'dynamodb:ListStreams',
    reason: 'ListStreams supports no resource narrower than "*" (CDK\'s DynamoEventSource grants it so).',
  },
  {
    action: 'xray:*',
    reason: 'X-Ray actions support no resource-level permissions (Service Authorization Reference).',
  },
  {
    action: 'ec2:*',
    reason:
      'The network-interface actions of AWSLambdaVPCAccessExecutionRole support no resource narrower than "*".',
  },
  {
    action: 'logs:CreateLogGroup',
    reason: 'Part of the AWS managed AWSLambdaVPCAccessExecutionRole, which grants it on "*".',
  },
  {
    action: 'logs:*',
    reason: 'Part of the AWS managed AWSLambdaVPCAccessExecutionRole, which grants it on "*".',
  },
  { action: 'cloudwatch:PutMetricData', reason: 'PutMetricData supports no resource-level permissions.' },
];

/** The reason tables' own patterns: a plain glob over the granted text (not IAM's ARN segments). */
function glob(pattern: string, caseInsensitive: boolean): RegExp {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, caseInsensitive ? 'i' : '');
}

function list(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** Why a grant is kept: matched by its action (case-insensitive glob) and, when given, its resource (glob). */
export interface GrantReason {
  readonly action: string;
  readonly resource?: string;
  readonly reason: string;
}

function reasonFor(action: string, table: readonly GrantReason[], resource?: string): string | undefined {
  return table.find(
    (r) =>
      (glob(r.action, true).test(action) || r.action.toLowerCase() === action.toLowerCase()) &&
      (r.resource === undefined || resource === undefined || glob(r.resource, false).test(resource)),
  )?.reason;
}

/** One granted (action, resource) of a role's statement that no request used. */
export interface UnusedGrant {
  readonly role: string;
  readonly policy: string;
  readonly statement: number;
  readonly action: string;
  readonly resource: string;
  readonly reason?: string;
}

/** A `Resource: "*"` grant. */
export interface WildcardGrant {
  readonly role: string;
  readonly policy: string;
  readonly actions: readonly string[];
  readonly reason?: string;
}

/** The report over every usage file of a test run. */
export interface IamReport {
  readonly runs: number;
  readonly roles: readonly {
    readonly role: string;
    readonly name: string;
    readonly granted: number;
    readonly used: number;
  }[];
  readonly unused: readonly UnusedGrant[];
  readonly wildcards: readonly WildcardGrant[];
  readonly denied: readonly {
    readonly caller: string;
    readonly action: string;
    readonly resource: string;
    readonly runs: number;
  }[];
}

/** Computes the report; roles and grants come from the files themselves (the deployed stack). */
export function iamReport(
  files: readonly IamUsageFile[],
  /** An app's own reasons, looked up before tenang's (UNUSED_GRANT_REASONS). @default none */
  appReasons: readonly GrantReason[] = [],
): IamReport {
  const reasons = [...appReasons, ...UNUSED_GRANT_REASONS];
  const roles = new Map<string, { name: string; policies: readonly NamedPolicy[] }>();
  for (const f of files) for (const [id, r] of Object.entries(f.roles)) if (!roles.has(id)) roles.set(id, r);
  const used = files.flatMap((f) => f.used);
  const unused: UnusedGrant[] = [];
  const wildcards: WildcardGrant[] = [];
  const summary: { role: string; name: string; granted: number; used: number }[] = [];
  for (const [roleId, role] of roles) {
    let granted = 0;
    let usedCount = 0;
    for (const policy of role.policies) {
      const doc = policy.document.Statement;
      const statements: readonly PolicyStatement[] = Array.isArray(doc) ? doc : [doc];
      statements.forEach((st, index) => {
        if (st.Effect !== 'Allow' || st.Action === undefined) return;
        const resources = list(st.Resource);
        const actions = list(st.Action);
        if (resources.includes('*'))
          wildcards.push({
            role: roleId,
            policy: policy.id,
            actions,
            reason: actions.map((a) => reasonFor(a, WILDCARD_RESOURCE_REASONS)).find((r) => r !== undefined),
          });
        for (const action of actions) {
          for (const resource of resources) {
            granted += 1;
            const hit = used.some(
              (u) =>
                u.role === roleId &&
                u.allowedBy.some((ref) => ref.policyId === policy.id && ref.index === index) &&
                actionPatternMatches(action, u.action) &&
                resourcePatternMatches(resource, u.resource),
            );
            if (hit) usedCount += 1;
            else
              unused.push({
                role: roleId,
                policy: policy.id,
                statement: index,
                action,
                resource,
                reason: reasonFor(action, reasons, resource),
              });
          }
        }
      });
    }
    summary.push({ role: roleId, name: role.name, granted, used: usedCount });
  }
  const denied = new Map<string, { caller: string; action: string; resource: string; runs: number }>();
  for (const f of files) {
    const seen = new Set<string>();
    for (const d of f.denied) {
      const key = `${d.caller}|${d.action}|${d.resource}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const entry = denied.get(key) ?? { ...d, runs: 0 };
      entry.runs += 1;
      denied.set(key, entry);
    }
  }
  return { runs: files.length, roles: summary, unused, wildcards, denied: [...denied.values()] };
}

/** The report as markdown (bench/IAM.md). */
export function iamReportMarkdown(report: IamReport, generatedAt: string): string {
  const lines: string[] = [
    '# IAM: grants used by the local platform',
    '',
    `Generated by \`npm run iam-report\` on ${generatedAt} from ${report.runs} local platform runs (reports/iam/, written by every platform a test, drill, scenario or chaos run starts).`,
    '',
    '| role | granted (action × resource) | used | unused |',
    '|---|---|---|---|',
    ...report.roles.map((r) => `| ${r.name} | ${r.granted} | ${r.used} | ${r.granted - r.used} |`),
    '',
    '## Unused grants',
    '',
    '| role | action | resource | reason |',
    '|---|---|---|---|',
    ...report.unused.map(
      (u) =>
        `| ${u.role} | \`${u.action}\` | \`${u.resource}\` | ${u.reason ?? '**no reason written: narrow or drop it**'} |`,
    ),
    '',
    '## `Resource: "*"`',
    '',
    '| role | actions | reason |',
    '|---|---|---|',
    ...report.wildcards.map(
      (w) =>
        `| ${w.role} | ${w.actions.map((a) => `\`${a}\``).join(', ')} | ${w.reason ?? '**no reason written**'} |`,
    ),
    '',
    '## Denied requests',
    '',
    report.denied.length === 0
      ? 'None.'
      : [
          '| caller | action | resource | runs |',
          '|---|---|---|---|',
          ...report.denied.map((d) => `| ${d.caller} | \`${d.action}\` | \`${d.resource}\` | ${d.runs} |`),
        ].join('\n'),
    '',
  ];
  return lines.join('\n');
}
