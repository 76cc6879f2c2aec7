// The shared event channel (Spec: Events) and the mail event stream. Publishers call
// EventBus.publish(channels, {type, action, data}) and emitMail(kind, payload); daemons build their
// bus with createEventBus(config, log). LocalEventBus is the in-process bus (tests, one process).
export * from './types.js';
export { LocalEventBus } from './local-bus.js';
export { SharedEventBus } from './shared-bus.js';
export { RedisTransport } from './redis-transport.js';
export { HubTransport } from './hub-transport.js';
export { createEventBus, hubSocketPath } from './factory.js';
export { publishSendEvent, SEND_EVENT_TYPES, type SendEventType, type SendEventInput } from './send-events.js';
export { closeRedis } from './redis-transport.js';
export { redisConnector, type RedisConnector } from './redis-client.js';
