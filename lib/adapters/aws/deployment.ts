/** Reads what a stack deployed, from CloudFormation itself (never from a second hand-written list). */
import {
  CloudFormationClient,
  GetTemplateCommand,
  paginateListStackResources,
} from '@aws-sdk/client-cloudformation';
import { pipelineFromTemplate, type PipelineConfig } from '../../config';

/** One deployed resource of the stack. */
export interface DeployedResource {
  readonly logicalId: string;
  readonly type: string;
  readonly physicalId: string;
  readonly status: string;
}

/** Lists every resource of a stack. */
export async function listStackResources(
  cfn: CloudFormationClient,
  stackName: string,
): Promise<DeployedResource[]> {
  const resources: DeployedResource[] = [];
  for await (const page of paginateListStackResources({ client: cfn }, { StackName: stackName })) {
    for (const r of page.StackResourceSummaries ?? []) {
      if (r.LogicalResourceId === undefined || r.ResourceType === undefined) continue;
      resources.push({
        logicalId: r.LogicalResourceId,
        type: r.ResourceType,
        physicalId: r.PhysicalResourceId ?? '',
        status: r.ResourceStatus ?? 'UNKNOWN',
      });
    }
  }
  return resources;
}

/** The queue name in a queue URL (`https://sqs…/123456789012/name` → `name`). */
export function queueNameFromUrl(url: string): string {
  return url.slice(url.lastIndexOf('/') + 1);
}

/**
 * The pipeline config a deployed stack was built with: its template's `tenang:pipeline`
 * metadata, read with one GetTemplate.
 */
export async function deployedPipelineConfig(
  cfn: CloudFormationClient,
  stackName: string,
  stage: string,
  region: string,
): Promise<PipelineConfig> {
  const { TemplateBody } = await cfn.send(new GetTemplateCommand({ StackName: stackName }));
  const template = JSON.parse(TemplateBody ?? '{}') as { Metadata?: Record<string, unknown> };
  return pipelineFromTemplate(template, `stack ${stackName}`, stage, region);
}
