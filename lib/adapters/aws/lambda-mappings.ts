/** MappingControl over the Lambda event source mapping API (B4). */
import {
  GetEventSourceMappingCommand,
  ResourceConflictException,
  ResourceInUseException,
  ResourceNotFoundException,
  UpdateEventSourceMappingCommand,
  type LambdaClient,
} from '@aws-sdk/client-lambda';
import {
  MappingBusyError,
  MappingNotFoundError,
  mappingStatus,
  type MappingControl,
  type MappingStatus,
} from '../../core/reconcile';

/** Reads and switches event source mappings with GetEventSourceMapping / UpdateEventSourceMapping. */
export class LambdaMappingControl implements MappingControl {
  /** Uses `client` for every call; the caller owns its configuration (endpoint, region, tracing). */
  constructor(private readonly client: LambdaClient) {}

  /** The mapping's State, read fresh. */
  async get(mappingId: string): Promise<MappingStatus> {
    try {
      const out = await this.client.send(new GetEventSourceMappingCommand({ UUID: mappingId }));
      // A response without State is not one we can act on: treat it like a transition.
      return mappingStatus(out.State ?? 'Unknown');
    } catch (error) {
      throw translate(error, mappingId, 'read');
    }
  }

  /** Sends Enabled only, so no other setting of the mapping is touched. */
  async setEnabled(mappingId: string, enabled: boolean): Promise<void> {
    try {
      await this.client.send(new UpdateEventSourceMappingCommand({ UUID: mappingId, Enabled: enabled }));
    } catch (error) {
      throw translate(error, mappingId, `set Enabled=${String(enabled)} on`);
    }
  }
}

/** SDK exceptions with a meaning for the reconciler become domain errors; anything else is rethrown as is. */
function translate(error: unknown, mappingId: string, action: string): unknown {
  if (error instanceof ResourceNotFoundException) {
    return new MappingNotFoundError(`cannot ${action} mapping ${mappingId}: it does not exist`, mappingId, {
      cause: error,
    });
  }
  if (error instanceof ResourceInUseException || error instanceof ResourceConflictException) {
    return new MappingBusyError(`cannot ${action} mapping ${mappingId} now: ${error.message}`, mappingId, {
      cause: error,
    });
  }
  return error;
}
