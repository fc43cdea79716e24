/**
 * The error catalogue as gRPC sees it: the status each code is answered with,
 * which the driver shows in the pod's FailedMount event and the metrics count
 * by (`grpc_code`). Only the adapters (this directory, the CLI) import it; a
 * Record over every ErrorCode, so a new code cannot be left without a status.
 */
import { status as GrpcStatus } from '@grpc/grpc-js'
import type { ErrorCode } from '../errors.js'

export const GRPC_STATUS_OF: Readonly<Record<ErrorCode, GrpcStatus>> = {
  BAD_REQUEST: GrpcStatus.INVALID_ARGUMENT,
  BAD_PARAMETER: GrpcStatus.INVALID_ARGUMENT,
  BAD_OBJECT: GrpcStatus.INVALID_ARGUMENT,
  BAD_FILE_PATH: GrpcStatus.INVALID_ARGUMENT,
  NO_POD_TOKEN: GrpcStatus.FAILED_PRECONDITION,
  KUBERNETES_API: GrpcStatus.UNAVAILABLE,
  VAULT_LOGIN_DENIED: GrpcStatus.PERMISSION_DENIED,
  VAULT_PERMISSION_DENIED: GrpcStatus.PERMISSION_DENIED,
  VAULT_NOT_FOUND: GrpcStatus.NOT_FOUND,
  SECRET_KEY_NOT_FOUND: GrpcStatus.NOT_FOUND,
  VAULT_BAD_REQUEST: GrpcStatus.INVALID_ARGUMENT,
  VAULT_UNAVAILABLE: GrpcStatus.UNAVAILABLE,
  VAULT_RATE_LIMITED: GrpcStatus.RESOURCE_EXHAUSTED,
  VAULT_BAD_RESPONSE: GrpcStatus.FAILED_PRECONDITION,
  DECODE_FAILED: GrpcStatus.INVALID_ARGUMENT,
  OUTPUT_FAILED: GrpcStatus.INVALID_ARGUMENT,
  VAULT_ADDRESS_NOT_ALLOWED: GrpcStatus.PERMISSION_DENIED,
  RESPONSE_TOO_LARGE: GrpcStatus.RESOURCE_EXHAUSTED,
  SECRET_TOO_LARGE: GrpcStatus.RESOURCE_EXHAUSTED,
  NO_OBJECT_VERSIONS: GrpcStatus.FAILED_PRECONDITION,
  MOUNT_BUDGET_EXCEEDED: GrpcStatus.RESOURCE_EXHAUSTED,
  VAULT_RESPONSE_TOO_LARGE: GrpcStatus.RESOURCE_EXHAUSTED,
  // A set-up to fix (the address), not a permission: the token was never sent there.
  VAULT_REDIRECT_REFUSED: GrpcStatus.FAILED_PRECONDITION,
  POD_TOKEN_MISMATCH: GrpcStatus.PERMISSION_DENIED,
  LOGIN_IDENTITY_MISMATCH: GrpcStatus.PERMISSION_DENIED,
  AUDIENCE_NOT_ALLOWED: GrpcStatus.PERMISSION_DENIED,
  DEADLINE_EXCEEDED: GrpcStatus.DEADLINE_EXCEEDED,
  CANCELLED: GrpcStatus.CANCELLED,
  HMAC_KEY_UNAVAILABLE: GrpcStatus.UNAVAILABLE,
  SHUTTING_DOWN: GrpcStatus.UNAVAILABLE,
  INTERNAL: GrpcStatus.INTERNAL,
}

/** The status a ProviderError with `code` is answered with. */
export function grpcStatusOf(code: ErrorCode): GrpcStatus {
  return GRPC_STATUS_OF[code]
}

/** A gRPC status number's canonical name (`PERMISSION_DENIED`), `UNKNOWN` for a number grpc-js does not name. */
export function grpcStatusName(status: number): string {
  const name = (GrpcStatus as unknown as Record<number, string | undefined>)[status]
  return typeof name === 'string' ? name : 'UNKNOWN'
}

/** The status name a Mount's outcome is counted under: `OK` for a success, else its code's status. */
export function mountStatusName(code: ErrorCode | undefined): string {
  return code === undefined ? 'OK' : grpcStatusName(GRPC_STATUS_OF[code])
}
