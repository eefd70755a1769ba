"""Decisions about a node's Ascend NPU software (driver, firmware) that the roles take on the controller."""
