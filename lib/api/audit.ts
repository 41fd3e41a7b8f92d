/**
 * `tenang/audit`: the worker-queue checklist as a cdk-nag NagPack (`TenangChecks`) anyone can
 * attach to an app, and the template audit behind `tenang audit <template>` (JSON, YAML, SAM, cdk.out).
 */
export { TenangChecks } from '../audit/tenang-checks';
export {
  auditTemplate,
  auditTemplates,
  type StackTemplate,
  type TemplateAudit,
} from '../audit/template-audit';
export { readCloudAssembly, readTemplateSource, readTemplateText } from '../audit/template-input';
export { TemplateFormatError } from '../audit/template-text';
export { auditPipelineConfig } from '../audit/config-audit';
export { auditFailed, type AuditFinding, type ChecklistItem } from '../audit/checklist';
