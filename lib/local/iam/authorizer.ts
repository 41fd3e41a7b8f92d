/**
 * Who a request runs as, and whether AWS would let it through. The local platform gives every
 * deployed function (and the Lambda service's own requests on its behalf: SQS polling and
 * deletes, stream reads, on-failure destinations) credentials of the function's execution role,
 * and CloudWatch's alarm actions credentials of the service principal `cloudwatch.amazonaws.com`.
 * The IAM proxy (lib/local/iam/iam-proxy.ts) asks this authorizer about each request: the
 * caller's identity policies and the resource's policy are evaluated by AWS's rules
 * (lib/local/iam/evaluate.ts). Requests signed with any other key (the CLI, tests, the
 * provisioner: an operator or administrator) are not evaluated.
 *
 * Every decision is recorded: which statement allowed each request (the least-privilege report,
 * `npm run iam-report`, lists the grants no request ever used) and every denial.
 */
import { randomBytes } from 'node:crypto';
import type { DeployedPolicies, DeployedRole } from './deployed-policies';
import {
  accessDeniedMessage,
  evaluate,
  type AuthorizationRequest,
  type ContextValue,
  type Decision,
  type RequestPrincipal,
  type StatementRef,
} from './evaluate';
import type { ApiRequest, AuthorizationCheck } from './request-actions';

/** Credentials handed to a caller (an environment's AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY). */
export interface LocalCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** A caller the authorizer knows. */
export type Caller =
  | { readonly kind: 'role'; readonly role: DeployedRole; readonly sessionName: string }
  | { readonly kind: 'service'; readonly service: string };

/** One check's outcome. */
export interface CheckOutcome {
  readonly check: AuthorizationCheck;
  readonly decision: Decision;
}

/** A request's outcome: allowed when every check is. */
export interface AuthorizationOutcome {
  readonly allowed: boolean;
  readonly outcomes: readonly CheckOutcome[];
  /** The first denied check and AWS's message for it. */
  readonly denied?: { readonly check: AuthorizationCheck; readonly message: string };
}

/** A granted statement used by a request (for the least-privilege report). */
export interface UsageRecord {
  readonly role: string;
  readonly action: string;
  readonly resource: string;
  readonly allowedBy: readonly StatementRef[];
}

/** A denied request, as the platform logged it. */
export interface DenialRecord {
  readonly caller: string;
  readonly action: string;
  readonly resource: string;
  readonly message: string;
}

/** Local access key ids look like AWS's temporary ones (ASIA + 16), so the SDK treats them alike. */
function accessKeyId(n: number): string {
  return `ASIATENANG${String(n).padStart(10, '0')}`;
}

/** Authorizes requests against a deployed stack's policies. */
export class IamAuthorizer {
  private readonly callers = new Map<string, Caller>();
  private readonly usage = new Map<string, UsageRecord>();
  private readonly denialLog: DenialRecord[] = [];
  /** Role ARN → the `action|resource` grants withheld from it (withhold). */
  private readonly withheldGrants = new Map<string, Set<string>>();
  private next = 1;

  public constructor(public readonly policies: DeployedPolicies) {}

  /** Credentials that act as `roleArn` in a session named `sessionName` (the function's name). */
  public credentialsForRole(roleArn: string, sessionName: string): LocalCredentials {
    const role = this.policies.roles.get(roleArn);
    if (role === undefined) throw new Error(`no deployed role ${roleArn}`);
    return this.register({ kind: 'role', role, sessionName });
  }

  /** Credentials that act as an AWS service principal, e.g. cloudwatch.amazonaws.com. */
  public credentialsForService(service: string): LocalCredentials {
    return this.register({ kind: 'service', service });
  }

  /**
   * From now on `roleArn`'s own policies no longer grant `action` on `resource` (exact ARN and
   * action as a request checks them): a deploy that lost the grant. The request is judged as if
   * no identity-based policy existed for it, so it is denied unless a resource policy allows it,
   * with AWS's "no identity-based policy allows" message. restoreGrants undoes it.
   */
  public withhold(roleArn: string, action: string, resource: string): void {
    if (!this.policies.roles.has(roleArn)) throw new Error(`no deployed role ${roleArn}`);
    const withheld = this.withheldGrants.get(roleArn) ?? new Set<string>();
    withheld.add(`${action.toLowerCase()}|${resource}`);
    this.withheldGrants.set(roleArn, withheld);
  }

  /** Every grant withheld from `roleArn` is back (the fixed deploy). */
  public restoreGrants(roleArn: string): void {
    this.withheldGrants.delete(roleArn);
  }

  /** The caller behind an access key id; undefined for keys the platform did not hand out. */
  public callerOf(accessKey: string | undefined): Caller | undefined {
    return accessKey === undefined ? undefined : this.callers.get(accessKey);
  }

  /** What the log line and messages call a caller. */
  public static describe(caller: Caller): string {
    return caller.kind === 'role' ? caller.role.name : caller.service;
  }

  /**
   * Evaluates every check of `api` for `caller`. `context` holds the request's context keys
   * (aws:SecureTransport, aws:SourceArn, …). Checks implied by the resource are added: a
   * publisher to a KMS-encrypted topic also needs kms:GenerateDataKey and kms:Decrypt on its key.
   */
  public authorize(
    caller: Caller,
    api: ApiRequest,
    context: Readonly<Record<string, ContextValue | undefined>>,
  ): AuthorizationOutcome {
    const checks = [...api.checks, ...this.impliedChecks(api.checks)];
    const principal: RequestPrincipal =
      caller.kind === 'role'
        ? {
            type: 'role',
            roleArn: caller.role.arn,
            sessionName: caller.sessionName,
            accountId: this.policies.accountId,
          }
        : { type: 'service', service: caller.service };
    const outcomes: CheckOutcome[] = [];
    for (const check of checks) {
      const request: AuthorizationRequest = {
        principal,
        action: check.action,
        resource: check.resource,
        context,
      };
      const resourcePolicy = this.policies.resourcePolicies.get(check.resource);
      const withheld =
        caller.kind === 'role' &&
        this.withheldGrants.get(caller.role.arn)?.has(`${check.action.toLowerCase()}|${check.resource}`) ===
          true;
      const decision = evaluate(request, {
        identity: caller.kind === 'role' && !withheld ? caller.role.identity : [],
        resource: resourcePolicy,
        resourceAccountId: this.policies.accountId,
        resourceKind: this.policies.keys.has(check.resource) ? 'kms' : 'standard',
      });
      outcomes.push({ check, decision });
      if (decision.decision !== 'allow') {
        const message = accessDeniedMessage(request, decision);
        this.denialLog.push({
          caller: IamAuthorizer.describe(caller),
          action: check.action,
          resource: check.resource,
          message,
        });
        return { allowed: false, outcomes, denied: { check, message } };
      }
    }
    if (caller.kind === 'role') {
      for (const { check, decision } of outcomes) {
        const key = `${caller.role.logicalId}|${check.action}|${check.resource}`;
        if (!this.usage.has(key))
          this.usage.set(key, {
            role: caller.role.logicalId,
            action: check.action,
            resource: check.resource,
            allowedBy: decision.allowedBy,
          });
      }
    }
    return { allowed: true, outcomes };
  }

  /** Every distinct (role, action, resource) allowed so far, with the statements that allowed it. */
  public usageRecords(): UsageRecord[] {
    return [...this.usage.values()];
  }

  /** Every denial so far, oldest first. */
  public denials(): DenialRecord[] {
    return [...this.denialLog];
  }

  private impliedChecks(checks: readonly AuthorizationCheck[]): AuthorizationCheck[] {
    const implied: AuthorizationCheck[] = [];
    for (const c of checks) {
      const key =
        c.action.toLowerCase() === 'sns:publish' ? this.policies.topicKeys.get(c.resource) : undefined;
      if (key === undefined) continue;
      // SNS server-side encryption: "the publisher must have kms:GenerateDataKey* and kms:Decrypt".
      implied.push(
        { action: 'kms:GenerateDataKey', resource: key },
        { action: 'kms:Decrypt', resource: key },
      );
    }
    return implied;
  }

  private register(caller: Caller): LocalCredentials {
    const id = accessKeyId(this.next++);
    this.callers.set(id, caller);
    return { accessKeyId: id, secretAccessKey: randomBytes(20).toString('base64url') };
  }
}
