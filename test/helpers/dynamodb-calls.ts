/** The SDK call counter, for the tests that count the DynamoDB (or SQS) calls a job costs. */
export { countSdkCalls, type SdkCallLog } from '../../harness/aws/call-counter';
