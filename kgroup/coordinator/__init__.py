"""kgroup.coordinator"""
