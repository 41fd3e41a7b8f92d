/**
 * Lambda functions in moto for tests that need an event source mapping: moto checks that the
 * function's role exists, so the role comes from a one-resource CloudFormation stack
 * (@aws-sdk/client-iam is not a dependency), and the code is a one-file zip built in memory
 * (moto needs no Docker to create a function, only to invoke one).
 */
import { crc32 } from 'node:zlib';
import {
  CreateStackCommand,
  DeleteStackCommand,
  DescribeStacksCommand,
  type CloudFormationClient,
} from '@aws-sdk/client-cloudformation';
import { CreateFunctionCommand, DeleteFunctionCommand, type LambdaClient } from '@aws-sdk/client-lambda';

/** A zip archive holding one stored (uncompressed) file: all CreateFunction needs without Docker. */
function zipWithOneFile(name: string, content: string): Uint8Array {
  const fileName = Buffer.from(name);
  const data = Buffer.from(content);
  const crc = crc32(data);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0); // local file header
  local.writeUInt16LE(20, 4); // version needed
  local.writeUInt16LE(0x21, 12); // date 1980-01-01
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(fileName.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0); // central directory header
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(0x21, 14);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(data.length, 24);
  central.writeUInt16LE(fileName.length, 28);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0); // end of central directory
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + fileName.length, 12);
  end.writeUInt32LE(local.length + fileName.length + data.length, 16);
  return Buffer.concat([local, fileName, data, central, fileName, end]);
}

/** A function in moto and what to delete afterwards. */
export interface MotoFunction {
  readonly functionName: string;
  readonly roleStackName: string;
  delete(): Promise<void>;
}

/** Creates a do-nothing function (and its role) in moto. */
export async function createMotoFunction(
  cfn: CloudFormationClient,
  lambda: LambdaClient,
  functionName: string,
  roleStackName: string,
): Promise<MotoFunction> {
  await cfn.send(
    new CreateStackCommand({
      StackName: roleStackName,
      Capabilities: ['CAPABILITY_IAM'],
      TemplateBody: JSON.stringify({
        Resources: {
          Role: {
            Type: 'AWS::IAM::Role',
            Properties: {
              AssumeRolePolicyDocument: {
                Version: '2012-10-17',
                Statement: [
                  {
                    Effect: 'Allow',
                    Principal: { Service: 'lambda.amazonaws.com' },
                    Action: 'sts:AssumeRole',
                  },
                ],
              },
            },
          },
        },
        Outputs: { RoleArn: { Value: { 'Fn::GetAtt': ['Role', 'Arn'] } } },
      }),
    }),
  );
  const stack = (await cfn.send(new DescribeStacksCommand({ StackName: roleStackName }))).Stacks?.[0];
  const roleArn = stack?.Outputs?.find((o) => o.OutputKey === 'RoleArn')?.OutputValue;
  if (stack?.StackStatus !== 'CREATE_COMPLETE' || roleArn === undefined) {
    await cfn.send(new DeleteStackCommand({ StackName: roleStackName }));
    throw new Error(`role stack ${roleStackName} is ${String(stack?.StackStatus)} without a RoleArn output`);
  }
  try {
    await lambda.send(
      new CreateFunctionCommand({
        FunctionName: functionName,
        Runtime: 'nodejs20.x',
        Role: roleArn,
        Handler: 'index.handler',
        Code: { ZipFile: zipWithOneFile('index.js', 'exports.handler = async () => ({});\n') },
      }),
    );
  } catch (error) {
    await cfn.send(new DeleteStackCommand({ StackName: roleStackName }));
    throw error;
  }
  return {
    functionName,
    roleStackName,
    delete: async () => {
      await lambda.send(new DeleteFunctionCommand({ FunctionName: functionName }));
      await cfn.send(new DeleteStackCommand({ StackName: roleStackName }));
    },
  };
}
