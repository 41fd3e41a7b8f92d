/**
 * F6-OperatorReach (deploy readiness): every runbook command reaches what it acts on from where
 * it runs. The table of what each command touches and how (lib/config/operator-access.ts) says
 * which commands act on a target inside a VPC; for those, the template must hold the function
 * they invoke, placed so the target admits it:
 * - the cache (an ElastiCache serverless cache) sits in subnets with no route in, behind its
 *   security groups; the `tenang cache` commands invoke the function of service `cache-admin`
 *   (POWERTOOLS_SERVICE_NAME), which must run in the cache's subnets with a security group that
 *   one of the cache's groups admits on the cache's port, and whose role may `elasticache:Connect`
 *   to the cache (IAM authentication). Without it the commands have no network path on AWS:
 *   operators have only AWS credentials, and nothing else of the stack is in that VPC.
 *
 * Lambda "Giving Lambda functions access to resources in an Amazon VPC"
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-vpc.html): a function attached to
 * a VPC reaches resources there through its network interfaces in the given subnets, with the
 * given security groups. EC2 security group rules: an inbound rule whose source is a security
 * group admits traffic from the network interfaces that carry that group
 * (https://docs.aws.amazon.com/vpc/latest/userguide/security-group-rules.html).
 *
 * Self-contained: deploy-readiness.ts lists this rule, so this module imports no value from it.
 */
import { OPERATOR_COMMANDS } from '../config/operator-access';
import type { ResourceFinding, TemplateIndex, TemplateResource, TemplateRule } from './rules';

const FUNCTION = 'AWS::Lambda::Function';
const SERVERLESS_CACHE = 'AWS::ElastiCache::ServerlessCache';
const SECURITY_GROUP = 'AWS::EC2::SecurityGroup';
const SECURITY_GROUP_INGRESS = 'AWS::EC2::SecurityGroupIngress';
const IAM_POLICY = 'AWS::IAM::Policy';
const ROLE = 'AWS::IAM::Role';
/** ElastiCache Serverless's Valkey port (6380 serves replica reads): lib/infra/cache.ts CACHE_PORTS, kept literal so the audit loads no CDK. */
const CACHE_PORT = 6379;

type Json = Readonly<Record<string, unknown>>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function list(value: unknown): readonly unknown[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : [value];
}

/** The logical id a `Ref` or `Fn::GetAtt` names. */
function refId(value: unknown): string | undefined {
  if (!isRecord(value)) return undefined;
  if (typeof value.Ref === 'string') return value.Ref;
  const getAtt = value['Fn::GetAtt'];
  if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') return getAtt[0];
  if (typeof getAtt === 'string') return getAtt.split('.')[0];
  return undefined;
}

/** How a value names something, for comparison: a logical id or its literal text. */
function key(value: unknown): string {
  return refId(value) ?? JSON.stringify(value);
}

/** Whether an ingress rule (inline or standalone) admits TCP `port`. */
function coversPort(rule: Json, port: number): boolean {
  const protocol = String(rule.IpProtocol ?? '');
  if (protocol === '-1' || protocol === 'all') return true;
  if (protocol !== 'tcp' && protocol !== '6') return false;
  const from = Number(rule.FromPort);
  const to = Number(rule.ToPort ?? rule.FromPort);
  return Number.isFinite(from) && Number.isFinite(to) && from <= port && port <= to;
}

/** The security groups (by key) that the groups `cacheGroups` admit on `port`. */
function admittedGroups(index: TemplateIndex, cacheGroups: ReadonlySet<string>, port: number): Set<string> {
  const admitted = new Set<string>();
  for (const [, ingress] of index.ofType(SECURITY_GROUP_INGRESS)) {
    const p = ingress.Properties ?? {};
    if (!cacheGroups.has(key(p.GroupId)) || p.SourceSecurityGroupId === undefined) continue;
    if (coversPort(p, port)) admitted.add(key(p.SourceSecurityGroupId));
  }
  for (const [id, group] of index.ofType(SECURITY_GROUP)) {
    if (!cacheGroups.has(id)) continue;
    for (const rule of list(group.Properties?.SecurityGroupIngress).filter(isRecord))
      if (rule.SourceSecurityGroupId !== undefined && coversPort(rule, port))
        admitted.add(key(rule.SourceSecurityGroupId));
  }
  return admitted;
}

/** Every statement of the role's policies in the template (inline and AWS::IAM::Policy). */
function roleStatements(index: TemplateIndex, roleId: string): Json[] {
  const documents: unknown[] = [];
  for (const policy of list(index.resources.get(roleId)?.Properties?.Policies).filter(isRecord))
    documents.push(policy.PolicyDocument);
  for (const [, policy] of index.ofType(IAM_POLICY))
    if (list(policy.Properties?.Roles).some((r) => refId(r) === roleId))
      documents.push(policy.Properties?.PolicyDocument);
  return documents.flatMap((d) => (isRecord(d) ? list(d.Statement).filter(isRecord) : []));
}

/** Whether the role may elasticache:Connect to the cache `cacheId` (an Allow naming it, or "*"). */
function mayConnect(index: TemplateIndex, roleId: string | undefined, cacheId: string): boolean {
  if (roleId === undefined) return false;
  return roleStatements(index, roleId).some(
    (s) =>
      s.Effect === 'Allow' &&
      list(s.Action).some((a) => a === 'elasticache:Connect' || a === 'elasticache:*' || a === '*') &&
      list(s.Resource).some((r) => r === '*' || refId(r) === cacheId),
  );
}

/** Functions whose Powertools service name is `service`. */
function functionsOfService(index: TemplateIndex, service: string): [string, TemplateResource][] {
  return index.ofType(FUNCTION).filter(([, fn]) => {
    const environment = fn.Properties?.Environment;
    const variables = isRecord(environment) && isRecord(environment.Variables) ? environment.Variables : {};
    return variables.POWERTOOLS_SERVICE_NAME === service;
  });
}

/** Why function `fnId` cannot reach the cache, or undefined when it can. */
function reachProblem(
  index: TemplateIndex,
  fnId: string,
  fn: TemplateResource,
  cacheId: string,
  cache: TemplateResource,
  admitted: ReadonlySet<string>,
): string | undefined {
  const vpc = isRecord(fn.Properties?.VpcConfig) ? fn.Properties.VpcConfig : undefined;
  const groups = list(vpc?.SecurityGroupIds).map(key);
  const subnets = new Set(list(vpc?.SubnetIds).map(key));
  if (groups.length === 0 || subnets.size === 0)
    return `${fnId} is not in a VPC (no VpcConfig with subnets and security groups): it cannot reach ${cacheId}`;
  if (!list(cache.Properties?.SubnetIds).some((s) => subnets.has(key(s))))
    return `${fnId} runs in none of ${cacheId}'s subnets`;
  if (!groups.some((g) => admitted.has(g)))
    return `${fnId}'s security groups (${groups.join(', ')}) are not admitted by ${cacheId}'s security groups on its port`;
  if (!mayConnect(index, refId(fn.Properties?.Role), cacheId))
    return `${fnId}'s role may not elasticache:Connect to ${cacheId} (IAM authentication)`;
  return undefined;
}

/** F6-OperatorReach: the commands whose target is in a VPC have a function there that the target admits. */
export const operatorReach: TemplateRule = {
  suffix: 'F6-OperatorReach',
  featureId: 'F6', // deploy readiness
  title:
    "Every runbook command reaches what it acts on with the operator's AWS credentials alone: a command whose target sits in a VPC (the cache) invokes a function of the stack in the target's subnets, with a security group the target admits and the grant to connect.",
  explanation:
    "The cache is in isolated subnets behind a security group that admits only its clients: an operator's machine has no network path to it, so `tenang cache invalidate` and `tenang cache flush` (runbooks/stale-cache.md, runbooks/stream-failures.md) work on AWS only through the cache-admin function. Without it the runbooks' mitigation of a stale cache cannot be carried out during the incident.",
  reads: {
    [FUNCTION]: ['Environment', 'VpcConfig', 'Role'],
    [SERVERLESS_CACHE]: ['SecurityGroupIds', 'SubnetIds'],
    [SECURITY_GROUP]: ['SecurityGroupIngress'],
    [SECURITY_GROUP_INGRESS]: ['GroupId', 'SourceSecurityGroupId', 'FromPort', 'ToPort', 'IpProtocol'],
    [IAM_POLICY]: ['Roles', 'PolicyDocument'],
    [ROLE]: ['Policies'],
  },
  check: (index) => {
    const caches = index.ofType(SERVERLESS_CACHE);
    if (caches.length === 0) return [];
    // Commands grouped by the function they go through.
    const byService = new Map<string, string[]>();
    for (const c of OPERATOR_COMMANDS)
      if (c.network.kind === 'via-function' && c.network.target === 'cache')
        byService.set(c.network.service, [
          ...(byService.get(c.network.service) ?? []),
          `\`tenang ${c.command}\``,
        ]);
    const findings: ResourceFinding[] = [];
    for (const [cacheId, cache] of caches) {
      const cacheGroups = new Set(list(cache.Properties?.SecurityGroupIds).map(key));
      const admitted = admittedGroups(index, cacheGroups, CACHE_PORT);
      for (const [service, commands] of byService) {
        const subject = `${commands.join(', ')} act on ${cacheId} inside its VPC`;
        const candidates = functionsOfService(index, service);
        if (candidates.length === 0) {
          findings.push({
            logicalId: cacheId,
            compliant: false,
            why: `${subject}, and the template has no function of service ${service} (POWERTOOLS_SERVICE_NAME) for them to invoke: an operator with AWS credentials has no network path to the cache. Deploy the cache-admin function in the cache's subnets with the cache client security group (tenang's PipelineStack builds it: lib/infra/cache-admin.ts)`,
          });
          continue;
        }
        const problems = candidates.map(
          ([fnId, fn]) => [fnId, reachProblem(index, fnId, fn, cacheId, cache, admitted)] as const,
        );
        const reaching = problems.find(([, problem]) => problem === undefined);
        findings.push(
          reaching === undefined
            ? {
                logicalId: cacheId,
                compliant: false,
                why: `${subject} through the ${service} function, which cannot reach it: ${problems.map(([, p]) => p).join('; ')}`,
              }
            : {
                logicalId: cacheId,
                compliant: true,
                why: `${subject} through ${reaching[0]} (service ${service}), which runs in its subnets with a security group it admits and may connect to it`,
              },
        );
      }
    }
    return findings;
  },
};
