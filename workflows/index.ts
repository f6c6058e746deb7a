export { purchaseWorkflow } from './purchase';
export { supportRefundWorkflow } from './support-refund';
export { strayPaymentWorkflow } from './stray-payment';
export { refundAgainWorkflow } from './refund-again';
export { notificationWorkflow } from './notification';
