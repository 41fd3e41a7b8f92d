/**
 * The reference app's HTTP entry: an API Gateway HTTP API with IAM authorization.
 * `POST /orders` and `POST /orders/{id}/payments` reach the ingress function (no VPC: it talks to
 * DynamoDB, SQS and SSM only); `GET /orders/{id}` reaches the reader, which runs in the cache's
 * VPC for the cache-aside read. Splitting them keeps the producer out of the VPC, so it needs
 * neither a NAT gateway nor interface endpoints.
 */
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import {
  LOG_RETENTION,
  TenangFunction,
  type FunctionVpcPlacement,
  environmentProblems,
  validateProps,
} from 'tenang/infra';

/** Props of Ingress. */
export interface IngressProps {
  readonly ingressEntry: string;
  readonly readerEntry: string;
  /** Variables of the ingress function (tables, queue URLs, degrade flag). */
  readonly ingressEnvironment: Readonly<Record<string, string>>;
  /** Variables of the reader (orders table, cache connection). */
  readonly readerEnvironment: Readonly<Record<string, string>>;
  /** The reader's VPC placement (the cache's). */
  readonly readerVpc: FunctionVpcPlacement;
  /** Steady-state request rate per second. @default 100 */
  readonly rateLimit?: number;
  /** Burst. @default 200 */
  readonly burstLimit?: number;
}

/** The HTTP API, its two functions and its access log. */
export class Ingress extends Construct {
  public readonly api: apigw.HttpApi;
  /** Handles the POST routes (producer). */
  public readonly ingress: TenangFunction;
  /** Handles GET /orders/{id} (cache-aside read). */
  public readonly reader: TenangFunction;

  public constructor(scope: Construct, id: string, props: IngressProps) {
    super(scope, id);
    validateProps('Ingress', props, [
      (p) => environmentProblems(p.ingressEnvironment),
      (p) => environmentProblems(p.readerEnvironment),
      (p) =>
        (p.rateLimit ?? 100) > 0 && (p.burstLimit ?? 200) >= (p.rateLimit ?? 100)
          ? undefined
          : 'burstLimit must be ≥ rateLimit > 0',
    ]);

    this.ingress = new TenangFunction(this, 'Ingress', {
      serviceName: 'ingress',
      entry: props.ingressEntry,
      timeoutSeconds: 10,
      memoryMb: 256,
      environment: props.ingressEnvironment,
      noAsyncDlqReason: 'Invoked synchronously by API Gateway: the caller receives every error.',
    });
    this.reader = new TenangFunction(this, 'Reader', {
      serviceName: 'order-reader',
      entry: props.readerEntry,
      timeoutSeconds: 5,
      memoryMb: 256,
      environment: props.readerEnvironment,
      vpc: props.readerVpc,
      noAsyncDlqReason: 'Invoked synchronously by API Gateway: the caller receives every error.',
    });

    const accessLogs = new logs.LogGroup(this, 'AccessLogs', { retention: LOG_RETENTION });
    this.api = new apigw.HttpApi(this, 'Api', {
      description: 'tenang ingress',
      createDefaultStage: false,
      defaultAuthorizer: new HttpIamAuthorizer(),
    });
    new apigw.HttpStage(this, 'DefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: props.rateLimit ?? 100, burstLimit: props.burstLimit ?? 200 },
      accessLogSettings: {
        destination: new apigw.LogGroupLogDestination(accessLogs),
        // HTTP API context variables (the REST API's standard fields use other names).
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            requestTime: '$context.requestTime',
            routeKey: '$context.routeKey',
            status: '$context.status',
            protocol: '$context.protocol',
            responseLength: '$context.responseLength',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });

    const write = new HttpLambdaIntegration('Write', this.ingress.function);
    const read = new HttpLambdaIntegration('Read', this.reader.function);
    this.api.addRoutes({ path: '/orders', methods: [apigw.HttpMethod.POST], integration: write });
    this.api.addRoutes({
      path: '/orders/{id}/payments',
      methods: [apigw.HttpMethod.POST],
      integration: write,
    });
    this.api.addRoutes({ path: '/orders/{id}', methods: [apigw.HttpMethod.GET], integration: read });
  }
}
