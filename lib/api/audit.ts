/**
 * `tenang/audit`: the worker-queue checklist as a cdk-nag NagPack (`TenangChecks`) anyone can
 * attach to an app, and the template audit behind `tenang audit --template`.
 */
export { TenangChecks } from '../infra/audit/tenang-checks';
export { auditTemplate } from '../infra/audit/template-audit';
export { auditPipelineConfig } from '../infra/audit/config-audit';
export { auditFailed, type ChecklistItem } from '../infra/audit/checklist';
