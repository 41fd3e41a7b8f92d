/**
 * `tenang/audit`: the worker-queue checklist as a cdk-nag NagPack (`TenangChecks`) anyone can
 * attach to an app, and the template audit behind `tenang audit <template>` (JSON, YAML, SAM, cdk.out).
 */
export { TenangChecks } from '../infra/audit/tenang-checks';
export {
  auditTemplate,
  auditTemplates,
  type StackTemplate,
  type TemplateAudit,
} from '../infra/audit/template-audit';
export { readCloudAssembly, readTemplateSource, readTemplateText } from '../infra/audit/template-input';
export { TemplateFormatError } from '../infra/audit/template-text';
export { auditPipelineConfig } from '../infra/audit/config-audit';
export { auditFailed, type AuditFinding, type ChecklistItem } from '../infra/audit/checklist';
