export { purchaseWorkflow } from './purchase';
export { supportRefundWorkflow } from './support-refund';
