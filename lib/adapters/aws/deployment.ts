/** Reads what a stack deployed, from CloudFormation itself (never from a second hand-written list). */
import { CloudFormationClient, paginateListStackResources } from '@aws-sdk/client-cloudformation';

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
